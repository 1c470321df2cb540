"""Text from batteries, answers, results and judges reaches the terminal as text: no rich markup is
read in it and no control or format character acts; each is shown as a visible escape instead.

The helper (`tabench_dsl.core.display`) is checked on its own, then every command that prints such text
is run in-process through `main(argv)` with hostile names, answers, paths and judge replies.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers_grading import write_battery
from support.make_results import make_record, small_results, write_results

from tabench_dsl.cli import main
from tabench_dsl.cli.progress import Progress
from tabench_dsl.core.display import is_shown_as_is, json_for_terminal, literal, shown
from tabench_dsl.core.errors import SpecError

#: Names that rich would read as markup, a hyperlink or an emoji, or a terminal as commands.
MARKUP_CLOSE = "[/foo]"
LINK = "[link=https://evil.example/]click[/link]"
EMOJI = "agent :smile:"
ESC_NAME = "agent\x1b[2J\x1b]0;pwned\x07"
BIDI_NAME = "agent\u202etxt.exe"


def _acting(text: str, *, lines: bool = False) -> list[str]:
    """The characters in `text` that a terminal could act on or that hide text."""
    layout = "\n\t\r" if lines else ""
    return [c for c in text if not is_shown_as_is(c) and c not in layout]


# -- the helper ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "single", "block"),
    [
        ("agent-a", "agent-a", "agent-a"),
        ("café 中文 😀 a\u00a0b", "café 中文 😀 a\u00a0b", "café 中文 😀 a\u00a0b"),
        ("a\x1b[31mred", "a\\x1b[31mred", "a\\x1b[31mred"),
        ("bell\x07 del\x7f csi\x9b", "bell\\x07 del\\x7f csi\\x9b", "bell\\x07 del\\x7f csi\\x9b"),
        ("x\u202ey\u2066z", "x<U+202E>y<U+2066>z", "x<U+202E>y<U+2066>z"),
        ("zero\u200bwidth\ufeff", "zero<U+200B>width<U+FEFF>", "zero<U+200B>width<U+FEFF>"),
        ("tag\U000e0041", "tag<U+E0041>", "tag<U+E0041>"),
        ("line\u2028sep", "line<U+2028>sep", "line<U+2028>sep"),
        ("lone\ud800", "lone<U+D800>", "lone<U+D800>"),
        ("two\nlines\tand tab", "two\\nlines\\tand tab", "two\nlines\tand tab"),
        ("windows\r\nend", "windows\\r\\nend", "windows\r\nend"),
        ("over\rwrite", "over\\rwrite", "over\\rwrite"),
        ("[/foo] [link=x]", "[/foo] [link=x]", "[/foo] [link=x]"),
    ],
)
def test_shown_makes_acting_characters_visible_and_keeps_the_rest(text: str, single: str, block: str) -> None:
    assert shown(text) == single
    assert shown(text, lines=True) == block


@settings(derandomize=True, max_examples=300)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_shown_never_lets_an_acting_character_through(text: str) -> None:
    single = shown(text)
    assert _acting(single) == [] and "\n" not in single and "\t" not in single
    block = shown(text, lines=True)
    assert _acting(block, lines=True) == []
    assert "\r" not in block.replace("\r\n", "")
    # Nothing that was already safe is changed.
    if all(is_shown_as_is(c) for c in text):
        assert single == text


@settings(derandomize=True, max_examples=300)
@given(st.dictionaries(st.text(), st.text() | st.integers()))
def test_json_for_terminal_keeps_every_value(data: dict) -> None:
    try:
        encoded = msgspec.json.encode(data)
    except UnicodeEncodeError:  # a lone surrogate: no JSON encoder writes one
        return
    safe = json_for_terminal(encoded)
    assert json.loads(safe) == json.loads(encoded)
    assert _acting(safe.decode("utf-8")) == []


def test_literal_is_never_read_as_markup() -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table()
    table.add_column("system")
    for name in (MARKUP_CLOSE, LINK, EMOJI):
        table.add_row(literal(name))
    console = Console(file=io.StringIO(), width=120, force_terminal=True, color_system="truecolor")
    console.print(table)
    out = console.file.getvalue()
    assert MARKUP_CLOSE in out and "[link=https://evil.example/]click[/link]" in out and ":smile:" in out
    assert "\x1b]8;" not in out  # no terminal hyperlink


@pytest.mark.parametrize("bar", [False, True])
def test_progress_lines_show_control_characters(bar: bool) -> None:
    stream = io.StringIO()
    progress = Progress(1, stream=stream, bar=bar)
    progress.log(f"answers.jsonl:2: unknown system {ESC_NAME} {BIDI_NAME} {MARKUP_CLOSE}")
    progress.close()
    out = stream.getvalue()
    assert "agent\\x1b[2J\\x1b]0;pwned\\x07" in out and "agent<U+202E>txt.exe" in out and MARKUP_CLOSE in out
    assert "\x07" not in out and "\u202e" not in out


def test_a_positioned_error_shows_its_source_line_with_the_caret_under_the_column() -> None:
    error = SpecError(
        "unknown field 'x\x1b[2J'",
        path="q\u202e.rubric",
        line=3,
        col=9,
        source_line="\t\x1b[2Jbad field",
        hint="fields are \x07 prompt",
    )
    assert error.render() == (
        "q<U+202E>.rubric:3:9: unknown field 'x\\x1b[2J'\n"
        "    \t\\x1b[2Jbad field\n"
        "    \t" + " " * len("\\x1b[2Jbad") + "^\n"
        "hint: fields are \\x07 prompt"
    )


# -- the commands ----------------------------------------------------------------------------------
@pytest.fixture
def hostile_results(tmp_path: Path) -> Path:
    return write_results(
        tmp_path / "run.jsonl",
        [
            make_record(MARKUP_CLOSE, "h01", "pass"),
            make_record(LINK, "h01", "fail"),
            make_record(EMOJI, "h02", "pass"),
            make_record(ESC_NAME, "h02", "adjudicate", answer="ok\x1b]0;title\x07 \u202eevil"),
            make_record(BIDI_NAME, "h03", "pass"),
        ],
    )


def _no_acting_text(out: str) -> None:
    assert _acting(out, lines=True) == [], [hex(ord(c)) for c in _acting(out, lines=True)]


def test_totals_shows_names_as_written(hostile_results: Path, capsys) -> None:
    assert main(["totals", str(hostile_results)]) == 0
    out = capsys.readouterr().out
    for name in (
        MARKUP_CLOSE,
        "[link=https://evil.example/]click[/link]",
        EMOJI,
        "agent<U+202E>txt.exe",
        "agent\\x1b[2J\\x1b]0;pwned\\x07",
    ):
        assert name in out
    assert "😄" not in out
    _no_acting_text(out)


def test_totals_json_escapes_what_a_terminal_would_act_on(hostile_results: Path, capsys) -> None:
    assert main(["totals", str(hostile_results), "--json"]) == 0
    out = capsys.readouterr().out
    _no_acting_text(out)
    systems = {s["system"] for s in json.loads(out)["systems"]}
    assert systems == {MARKUP_CLOSE, LINK, EMOJI, ESC_NAME, BIDI_NAME}


def test_a_hostile_judge_caption_is_text(tmp_path: Path, capsys) -> None:
    from tabench_dsl.core.records import JudgeInfo

    record = msgspec.structs.replace(
        make_record("a", "h01", "pass"), judge=JudgeInfo(backend="[bold]x[/i]", model="m\x1b[5m")
    )
    assert main(["totals", str(write_results(tmp_path / "r.jsonl", [record]))]) == 0
    out = capsys.readouterr().out
    assert "judge: [bold]x[/i]:m\\x1b[5m" in out


async def test_grade_prints_hostile_names_and_paths_as_text(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABENCH_CACHE", raising=False)
    battery = write_battery(tmp_path)
    answers = tmp_path / "answers\x1b[31m.jsonl"
    answers.write_text(
        "".join(
            json.dumps(x) + "\n"
            for x in [
                {"system": MARKUP_CLOSE, "question": "h02", "answer": "7311"},
                {"system": ESC_NAME, "question": "h03", "answer": "blue\u202e"},
                "not json",
            ]
        ),
        encoding="utf-8",
    )
    status = await asyncio.to_thread(
        main,
        [
            "grade",
            str(battery),
            "--answers",
            str(answers),
            "--no-cache",
            "--out",
            str(tmp_path / "out.jsonl"),
        ],
    )
    assert status == 1  # the bad line
    captured = capsys.readouterr()
    assert MARKUP_CLOSE in captured.out and "agent\\x1b[2J\\x1b]0;pwned\\x07" in captured.out
    assert "answers\\x1b[31m.jsonl:3: " in captured.err
    _no_acting_text(captured.out)
    _no_acting_text(captured.err)


async def test_calibrate_shows_a_judge_reason_as_text(
    tmp_path: Path, monkeypatch, capsys, judge_server
) -> None:
    monkeypatch.chdir(tmp_path)
    rubric = (
        'question q {\n  prompt "Say hi."\n  gold "hi"\n  t1 off\n'
        '  exemplar correct "hi \\u001b[2J there" why "greets"\n}\n'
    )
    battery = write_battery(tmp_path, rubric=rubric)
    server = await judge_server(
        [json.dumps({"verdict": "fail", "reason": "no \x1b]8;;http://x\x07link\u202e"})]
    )
    status = await asyncio.to_thread(
        main, ["calibrate", str(battery), "--judge", server.url, "--model", "m", "--no-cache"]
    )
    assert status == 0
    out = capsys.readouterr().out
    assert "answer: hi \\x1b[2J there" in out and "judge:  no \\x1b]8;;http://x\\x07link<U+202E>" in out
    _no_acting_text(out)


def test_adjudicate_shows_bidi_and_c1_controls(tmp_path: Path, monkeypatch, capsys) -> None:
    record = make_record(BIDI_NAME, "h04", "adjudicate", answer="fine \u202eevil\u2066 \x9b2J")
    results = write_results(tmp_path / "run.jsonl", [record])
    monkeypatch.setattr(sys, "stdin", io.StringIO("s\n"))
    assert main(["adjudicate", str(results), "--reviewer", "ana"]) == 0
    out = capsys.readouterr().out
    assert "=== [1/1] agent<U+202E>txt.exe · h04 ===" in out
    assert "Answer:\n    fine <U+202E>evil<U+2066> \\x9b2J\n" in out
    _no_acting_text(out)


def test_warnings_of_result_readers_show_names_as_text(tmp_path: Path, monkeypatch, capsys) -> None:
    from tabench_dsl.review.decisions import make_decision
    from tabench_dsl.store.decisions import append_decision

    results = write_results(tmp_path / "run.jsonl", small_results())
    ghost = make_record(ESC_NAME, "h04", "adjudicate")
    append_decision(tmp_path / "run.decisions.jsonl", make_decision(ghost, "pass", reviewer="ana"))
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    assert main(["adjudicate", str(results)]) == 0
    err = capsys.readouterr().err
    assert "decision on agent\\x1b[2J\\x1b]0;pwned\\x07/h04 ignored" in err
    _no_acting_text(err)


def test_error_messages_quote_paths_as_text(tmp_path: Path, capsys) -> None:
    assert main(["totals", str(tmp_path / "no\x1b[2Jsuch\u202e.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "no\\x1b[2Jsuch<U+202E>.jsonl: no such results file" in err
    _no_acting_text(err)


def test_compile_check_shows_question_ids_from_the_lock_as_text(tmp_path: Path, capsys) -> None:
    battery = write_battery(tmp_path)
    assert main(["compile", str(battery), "--lock"]) == 0
    lock = json.loads((battery / "tabench.lock").read_text(encoding="utf-8"))
    lock["questions"]["gone\x1b[2J\u202e"] = "0" * 64
    (battery / "tabench.lock").write_text(json.dumps(lock), encoding="utf-8")
    capsys.readouterr()
    assert main(["compile", str(battery), "--check"]) == 1
    out = capsys.readouterr().out
    assert "gone\\x1b[2J<U+202E>: in the lock but no longer in the battery" in out
    _no_acting_text(out)


class _Terminal(io.BytesIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("json_flag", [False, True])
def test_compile_shows_prompts_as_text_on_a_terminal_and_exactly_elsewhere(
    tmp_path: Path, monkeypatch, capsys, json_flag: bool
) -> None:
    battery = write_battery(tmp_path)
    answer = "hi \x1b[2J \u202e there"
    argv = [
        "compile",
        str(battery),
        "--question",
        "h01",
        "--answer",
        answer,
        *(["--json"] if json_flag else ["--part", "user"]),
    ]
    assert main(argv) == 0
    exact = capsys.readouterr().out
    assert answer in (json.loads(exact)["user"] if json_flag else exact)

    screen = _Terminal()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(screen, encoding="utf-8"))
    assert main(argv) == 0
    sys.stdout.flush()
    out = screen.getvalue().decode("utf-8")
    _no_acting_text(out)
    if json_flag:
        assert json.loads(out) == json.loads(exact)
    else:
        assert "hi \\x1b[2J <U+202E> there" in out

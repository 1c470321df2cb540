"""`tabench adjudicate`: one undecided adjudicate answer at a time, keys piped through stdin."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import msgspec
import pytest
from support.make_results import HOSTILE_ANSWER, make_record, small_results, write_battery, write_results

from tabench_dsl.cli import main
from tabench_dsl.review.viewer.run import compile_battery_at
from tabench_dsl.store.decisions import load_decisions


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path / "run.jsonl", small_results())


def adjudicate(monkeypatch, capsys, args: list[str], keys: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(keys))
    status = main(["adjudicate", *args])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_decide_one_skip_one(monkeypatch, capsys, results: Path) -> None:
    status, out, _ = adjudicate(
        monkeypatch, capsys, [str(results), "--reviewer", "ana"], "x\nf looks wrong to me\ns\n"
    )
    assert status == 0
    decisions_file = results.with_name("run.decisions.jsonl")
    assert out.startswith(f"2 answer(s) to decide; decisions go to {decisions_file} as ana.\n")
    first, second = out.split("=== [2/2]")
    # The first record is shown whole: answer, reason, every attempt's raw reply.
    assert "=== [1/2] agent-a · h04 ===" in first
    assert "adjudicate (contradiction): the judge said fail" in first
    assert f"Answer:\n    {HOSTILE_ANSWER}\n" in first
    assert "Reason:\n    Accurate: equivalent to the gold.\n" in first
    assert 'Attempt 1 (first) raw reply:\n    {"verdict": "fail", "reason": "The answer is correct' in first
    assert 'Attempt 2 (stern) raw reply:\n    {"verdict": "fail", "reason": "Accurate' in first
    assert "'x': type p, f, s or q" in first and "recorded: fail" in first
    assert "agent-b · h02 ===\nadjudicate (malformed)" in second
    assert "Attempt 2 (format) raw reply:\n    verdict: pass??\n" in second
    assert out.endswith("1 decided, 1 skipped, 1 still undecided.\n")

    [decision] = load_decisions(decisions_file)
    assert (decision.system, decision.question, decision.verdict, decision.reviewer, decision.note) == (
        "agent-a",
        "h04",
        "fail",
        "ana",
        "looks wrong to me",
    )
    assert decision.prompt_sha256 == small_results()[4].prompt_sha256

    # A second session starts where the first stopped: only the skipped answer is left.
    status, out, _ = adjudicate(monkeypatch, capsys, [str(results), "--reviewer", "bo"], "pass\n")
    assert status == 0 and "=== [1/1] agent-b · h02 ===" in out and "agent-a · h04" not in out
    assert [(d.question, d.verdict, d.reviewer, d.note) for d in load_decisions(decisions_file)] == [
        ("h04", "fail", "ana", "looks wrong to me"),
        ("h02", "pass", "bo", ""),
    ]
    status, out, _ = adjudicate(monkeypatch, capsys, [str(results)], "")
    assert out == f"Nothing to decide: no undecided adjudicate answer in {results}.\n"


def test_quit_and_end_of_input_decide_nothing(monkeypatch, capsys, results: Path) -> None:
    for keys in ("q\n", "", "s\n"):
        status, out, _ = adjudicate(monkeypatch, capsys, [str(results)], keys)
        assert status == 0 and "0 decided" in out
    assert not results.with_name("run.decisions.jsonl").exists()


def test_a_stale_decision_does_not_hide_the_record(monkeypatch, capsys, results: Path) -> None:
    status, _, _ = adjudicate(monkeypatch, capsys, [str(results), "--reviewer", "ana"], "p\nq\n")
    assert status == 0
    regraded = make_record("agent-a", "h04", "adjudicate", prompt_sha256="f" * 64)  # prompt changed
    with open(results, "ab") as f:
        f.write(msgspec.json.encode(regraded) + b"\n")
    status, out, err = adjudicate(monkeypatch, capsys, [str(results)], "q\n")
    assert "=== [1/2] agent-a · h04 ===" in out
    assert err == (
        "tabench: warning: decision on agent-a/h04 ignored: "
        "the prompt changed since the decision (sha256 differs)\n"
    )


def test_terminal_control_characters_are_shown_not_obeyed(monkeypatch, capsys, tmp_path: Path) -> None:
    path = write_results(
        tmp_path / "run.jsonl",
        [make_record("agent-a", "h01", "adjudicate", answer="fine\x1b[2J\x1b]0;owned\x07 answer\ttabbed")],
    )
    status, out, _ = adjudicate(monkeypatch, capsys, [str(path)], "q\n")
    assert status == 0 and "\x1b" not in out and "\x07" not in out
    assert "fine\\x1b[2J\\x1b]0;owned\\x07 answer\ttabbed" in out


def test_with_a_battery_the_gold_is_shown(monkeypatch, capsys, tmp_path: Path) -> None:
    battery = write_battery(tmp_path / "battery")
    sha = compile_battery_at(battery).questions["h04"].sha256
    record = make_record("agent-a", "h04", "adjudicate", prompt_sha256=sha)
    path = write_results(tmp_path / "run.jsonl", [record])
    _, out, _ = adjudicate(monkeypatch, capsys, [str(path), "--battery", str(battery)], "q\n")
    assert "Gold:\n    No <b>Summarize</b> stage exists\n" in out


def test_missing_results_is_a_usage_error(monkeypatch, capsys, tmp_path: Path) -> None:
    status, out, err = adjudicate(monkeypatch, capsys, [str(tmp_path / "none.jsonl")], "")
    assert status == 2 and out == ""
    assert err == f"tabench: error: {tmp_path / 'none.jsonl'}: no such results file\n"


async def test_grade_adjudicate_totals_report(monkeypatch, capsys, tmp_path: Path, judge_server) -> None:
    """A judge that contradicts itself twice leaves adjudicate records; a person decides them in the
    terminal; `tabench totals` and the report count the decisions; the prompts match the battery."""
    import asyncio
    import json

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TABENCH_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    contradiction = json.dumps({"verdict": "fail", "reason": "The answer matches the gold.", "facets": {}})
    server = await judge_server([contradiction])
    battery = write_battery(tmp_path / "battery")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        json.dumps({"system": "a", "question": "h02", "answer": "Ingest and Index <b>only</b>"})
        + "\n"
        + json.dumps({"system": "b", "question": "h03", "answer": "It squashes history"})
        + "\n",
        encoding="utf-8",
    )
    results = tmp_path / "results.jsonl"
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--out",
        str(results),
        "--judge",
        server.url,
        "--model",
        "m",
        "--no-cache",
    ]
    assert await asyncio.to_thread(main, argv) == 0
    capsys.readouterr()

    keys = "p close enough\nf\n"
    status, out, _ = adjudicate(monkeypatch, capsys, [str(results), "--reviewer", "ana"], keys)
    assert status == 0 and out.endswith("2 decided, 0 skipped, 0 still undecided.\n")
    assert "Attempt 2 (stern) raw reply:" in out

    assert main(["totals", str(results), "--json"]) == 0
    systems = {s["system"]: s for s in json.loads(capsys.readouterr().out)["systems"]}
    assert (systems["a"]["pass"], systems["a"]["human_pass"], systems["a"]["adjudicate"]) == (1, 1, 0)
    assert (systems["b"]["fail"], systems["b"]["human_fail"], systems["b"]["adjudicate"]) == (1, 1, 0)

    report = tmp_path / "report.html"
    assert main(["report", str(results), "--html", str(report), "--battery", str(battery)]) == 0
    html = report.read_text(encoding="utf-8")
    assert "human pass" in html and "human fail" in html and "close enough" in html
    assert "sha256 mismatch" not in html and '<a href="#prompt-h02">SYSTEM prompt</a>' in html
    assert "Ingest and Index &lt;b&gt;only&lt;/b&gt;" in html


def test_with_a_battery_the_whole_key_is_shown(monkeypatch, capsys, tmp_path: Path) -> None:
    # The gold, each accepted variant, the trap and the scoring text: what the judge was given.
    battery = write_battery(tmp_path / "battery")
    (battery / "memos.rubric").write_text(
        "question h04 {\n"
        '  prompt "Is there a <Summarize> stage?"\n'
        '  gold "No <b>Summarize</b> stage exists"\n'
        '  accept "There is no Summarize stage"\n'
        '  accept "No such stage"\n'
        '  trap "There is no Summarize stage: nothing runs after Compact."\n'
        '  scoring "Pass only if the answer denies the stage."\n'
        "}\n",
        encoding="utf-8",
    )
    sha = compile_battery_at(battery).questions["h04"].sha256
    path = write_results(
        tmp_path / "run.jsonl", [make_record("agent-a", "h04", "adjudicate", prompt_sha256=sha)]
    )
    _, out, _ = adjudicate(monkeypatch, capsys, [str(path), "--battery", str(battery)], "q\n")
    assert (
        "Gold:\n    No <b>Summarize</b> stage exists\n"
        "Accepted variant:\n    There is no Summarize stage\n"
        "Accepted variant:\n    No such stage\n"
        "Trap (the truth a trapped answer denies):\n"
        "    There is no Summarize stage: nothing runs after Compact.\n"
        "Scoring:\n    Pass only if the answer denies the stage.\n"
        "Answer:\n"
    ) in out


def test_a_key_from_a_changed_prompt_says_it_is_todays(monkeypatch, capsys, tmp_path: Path) -> None:
    battery = write_battery(tmp_path / "battery")
    path = write_results(
        tmp_path / "run.jsonl", [make_record("agent-a", "h04", "adjudicate", prompt_sha256="0" * 64)]
    )
    _, out, _ = adjudicate(monkeypatch, capsys, [str(path), "--battery", str(battery)], "q\n")
    assert (
        "Gold:\n    No <b>Summarize</b> stage exists\n"
        "    (today's battery: its prompt differs from the one this answer was graded with)\n"
        "Answer:\n"
    ) in out


class TerminalInput(io.StringIO):
    """Keys typed at a terminal: stdin that says it is one."""

    def isatty(self) -> bool:
        return True


def test_piped_lines_are_decisions_never_notes(monkeypatch, capsys, results: Path) -> None:
    # Two answers to decide, two decisions piped: the second is a decision, not the first one's note.
    status, out, _ = adjudicate(
        monkeypatch, capsys, [str(results), "--reviewer", "ana"], "p\nf wrong stage\n"
    )
    assert status == 0 and out.endswith("2 decided, 0 skipped, 0 still undecided.\n")
    assert "Note (optional" not in out
    decisions = load_decisions(results.with_name("run.decisions.jsonl"))
    assert [(d.question, d.verdict, d.note) for d in decisions] == [
        ("h04", "pass", ""),
        ("h02", "fail", "wrong stage"),
    ]


def test_at_a_terminal_a_note_is_asked_for_after_a_decision(monkeypatch, capsys, results: Path) -> None:
    monkeypatch.setattr(sys, "stdin", TerminalInput("f\nlooks wrong to me\np the gold allows it\n"))
    assert main(["adjudicate", str(results), "--reviewer", "ana"]) == 0
    out = capsys.readouterr().out
    assert out.count("Note (optional, Enter for none) > ") == 1  # not after a key with its note
    assert "Decide: [p]ass  [f]ail  [s]kip  [q]uit (a note may follow: f names the trap) > " in out
    decisions = load_decisions(results.with_name("run.decisions.jsonl"))
    assert [(d.verdict, d.note) for d in decisions] == [
        ("fail", "looks wrong to me"),
        ("pass", "the gold allows it"),
    ]


def test_help_says_what_is_read_after_a_decision(capsys) -> None:
    assert main(["adjudicate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "A note may follow the key on its line (f names the trap)" in text
    assert (
        "From a pipe every line is a decision, its note on the same line: no note line is read after it."
        in text
    )

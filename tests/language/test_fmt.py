"""`tabench fmt`: the canonical layout (cases in tests/language/fmt_cases/, written by hand), never a
changed prompt (every golden battery and example compiled before and after, byte for byte),
idempotent (Hypothesis, over generated rubrics), and the command's --check and --diff."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tabench_dsl.cli import main
from tabench_dsl.core.errors import SpecError
from tabench_dsl.language.format_rubric import canonical_string
from tabench_dsl.language.formatting import format_text

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
CASES = sorted((HERE / "fmt_cases").glob("*.case"))
BATTERIES = sorted(
    p.parent for p in [*ROOT.glob("tests/golden/*/battery.yaml"), *ROOT.glob("examples/*/battery.yaml")]
)


def read_fmt_case(path: Path) -> tuple[str, str]:
    """A case file: comment lines, then `=== input` and `=== output` blocks (each the whole text of
    a file, its final line break included). The case's name ends `.rubric.case` or `.policy.case`."""
    _, rest = path.read_text(encoding="utf-8").split("=== input\n", 1)
    given, expected = rest.split("=== output\n", 1)
    return given, expected


@pytest.mark.parametrize("case", CASES, ids=[c.name.removesuffix(".case") for c in CASES])
def test_fmt_case(case: Path) -> None:
    given, expected = read_fmt_case(case)
    name = case.name.removesuffix(".case")
    assert format_text(given, name) == expected
    assert format_text(expected, name) == expected


def test_there_are_cases_of_both_kinds() -> None:
    assert {c.name.split(".")[-2] for c in CASES} == {"rubric", "policy"}


def _compiled(battery: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["compile", str(battery), "--part", "all"]) == 0
    prompts = capsys.readouterr().out
    assert main(["compile", str(battery), "--json"]) == 0
    return prompts + capsys.readouterr().out


@pytest.mark.parametrize("battery", BATTERIES, ids=[f"{b.parent.name}/{b.name}" for b in BATTERIES])
def test_formatting_a_battery_changes_no_prompt(battery: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    copy = tmp_path / battery.name
    shutil.copytree(battery, copy, ignore=shutil.ignore_patterns("expected"))
    monkeypatch.chdir(tmp_path)
    before = _compiled(Path(battery.name), capsys)
    assert main(["fmt", battery.name]) == 0
    capsys.readouterr()
    after = _compiled(Path(battery.name), capsys)
    assert after == before
    assert main(["fmt", "--check", battery.name]) == 0  # idempotent: nothing left to change
    assert capsys.readouterr().out.startswith("0 files would be reformatted, ")


def test_the_goldens_include_files_that_change(tmp_path: Path, monkeypatch, capsys) -> None:
    # The test above would prove little if every file were already canonical.
    shutil.copytree(ROOT / "tests" / "golden", tmp_path / "golden")
    monkeypatch.chdir(tmp_path)
    assert main(["fmt", "--check", "golden"]) == 1
    out = capsys.readouterr().out
    assert "would reformat golden/continued-policies/zeta.policy\n" in out
    assert "would reformat golden/unicode-escapes/questions.rubric\n" in out


def test_check_and_diff_write_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    rubric = tmp_path / "q.rubric"
    rubric.write_text('question h01 {\n    prompt   "p"\n  gold "g" }\n', encoding="utf-8")
    (tmp_path / "ok.policy").write_text("S1: fine.\n", encoding="utf-8")
    assert main(["fmt", "--check", "q.rubric", "ok.policy"]) == 1
    assert capsys.readouterr().out == "would reformat q.rubric\n1 file would be reformatted, 1 unchanged\n"
    assert main(["fmt", "--diff", "q.rubric"]) == 0
    assert capsys.readouterr().out == (
        '--- q.rubric\n+++ q.rubric\n@@ -1,3 +1,4 @@\n question h01 {\n-    prompt   "p"\n'
        '-  gold "g" }\n+  prompt "p"\n+  gold "g"\n+}\n1 file would be reformatted, 0 unchanged\n'
    )
    assert rubric.read_text(encoding="utf-8") == 'question h01 {\n    prompt   "p"\n  gold "g" }\n'
    assert main(["fmt", "q.rubric"]) == 0
    assert capsys.readouterr().out == "reformatted q.rubric\n1 file reformatted, 0 unchanged\n"
    assert rubric.read_text(encoding="utf-8") == 'question h01 {\n  prompt "p"\n  gold "g"\n}\n'


def test_a_syntax_error_is_reported_and_the_file_left_alone(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    text = 'question h01 {\n  prompt "p\n}\n'
    (tmp_path / "bad.rubric").write_text(text, encoding="utf-8")
    assert main(["fmt", "bad.rubric"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("bad.rubric:2:10: unterminated string\n")
    assert out == "0 files reformatted, 0 unchanged, 1 failed\n"
    assert (tmp_path / "bad.rubric").read_text(encoding="utf-8") == text


def test_a_symlink_is_not_followed(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real.rubric").write_text('question h01 {\nprompt "p"\ngold "g"\n}\n', encoding="utf-8")
    (tmp_path / "link.rubric").symlink_to(tmp_path / "real.rubric")
    assert main(["fmt", "link.rubric"]) == 2
    assert "link.rubric: not a regular file; left alone" in capsys.readouterr().err
    assert (tmp_path / "real.rubric").read_text(
        encoding="utf-8"
    ) == 'question h01 {\nprompt "p"\ngold "g"\n}\n'


def test_bom_and_crlf_are_read(tmp_path: Path) -> None:
    text = '\ufeffquestion h01 {\r\n  prompt "p"\r\n  gold "g"\r\n}\r\n'.removeprefix("\ufeff")
    assert format_text(text, "q.rubric") == 'question h01 {\n  prompt "p"\n  gold "g"\n}\n'


def test_canonical_string_round_trips() -> None:
    for value in ["", 'a"b\\c', "tab\there", "\u00a0\u200b\u202e", "🎉", "\x00\x1f\x7f", "\u2028"]:
        written = canonical_string(value)
        assert json.loads(written) == value
        assert written.isprintable()


# Generated rubrics: values with quotes, backslashes, controls and any character; layout noise.

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_LONG_TEXT = st.lists(
    st.text(st.characters(blacklist_characters='"\r', blacklist_categories=("Cs",)), max_size=8), max_size=3
).map("\n".join)
_SPACE = st.sampled_from([" ", "  ", "\t", " \t "])
_INDENT = st.sampled_from(["", "  ", "    ", "\t"])
_COMMENT = st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=10).map(
    lambda t: "#" + t
)


@st.composite
def _string(draw: st.DrawFn, *, long_ok: bool = True) -> str:
    value = draw(_TEXT)
    style = draw(st.sampled_from(["canonical", "ascii", "json"] + (["long"] if long_ok else [])))
    if style == "long":
        body = draw(_LONG_TEXT)
        assume(not body.endswith('"'))
        return '"""' + draw(st.sampled_from(["", "\n"])) + body + '"""'
    if style == "ascii":
        return json.dumps(value, ensure_ascii=True).replace("/", "\\/")
    if style == "json":
        written = json.dumps(value, ensure_ascii=False)
        assume("\n" not in written and "\r" not in written and "\u2028" not in written)
        return written
    return canonical_string(value)


@st.composite
def _field(draw: st.DrawFn) -> list[str]:
    kind = draw(
        st.sampled_from(["prompt", "gold", "accept", "trap", "scoring", "exemplar", "facet", "t1", "tags"])
    )
    if kind == "exemplar":
        parts = [
            "exemplar",
            draw(st.sampled_from(["correct", "partial", "incorrect"])),
            draw(_string()),
            "why",
        ]
        parts.append(draw(_string()))
        if draw(st.booleans()):
            parts += ["expect", draw(st.sampled_from(["pass", "fail"]))]
        return parts
    if kind == "facet":
        return ["facet", draw(st.sampled_from(["missing_minor", "extra_correct_info"])), draw(_string())]
    if kind == "t1":
        return ["t1", draw(st.sampled_from(["on", "off"]))]
    if kind == "tags":
        return [
            "tags",
            *draw(
                st.lists(
                    st.sampled_from(['"easy"', '"topic:http"', '"b.1"']), min_size=1, max_size=2, unique=True
                )
            ),
        ]
    return [kind, draw(_string())]


@st.composite
def rubrics(draw: st.DrawFn) -> str:
    """A rubric file that parses, written with random layout and comments."""
    out = []
    for n in range(draw(st.integers(1, 3))):
        out.append(draw(st.sampled_from(["", "\n", "\n\n"])))
        if draw(st.booleans()):
            out.append(draw(_INDENT) + draw(_COMMENT) + "\n")
        out.append(f"question q{n}{draw(_SPACE)}{{")
        if draw(st.booleans()):
            out.append(draw(_SPACE) + draw(_COMMENT))
        out.append("\n")
        for parts in [
            ["prompt", draw(_string())],
            ["gold", draw(_string())],
            *draw(st.lists(_field(), max_size=4)),
        ]:
            out.append(draw(_INDENT) + draw(_SPACE).join(parts))
            if draw(st.booleans()):
                out.append(draw(_SPACE) + draw(_COMMENT))
            out.append("\n" + draw(st.sampled_from(["", "\n", "\n  \n"])))
        out.append(draw(_INDENT) + "}" + draw(st.sampled_from(["", " " + draw(_COMMENT)])) + "\n")
    return "".join(out)


MANIFEST = "name: gen\nscorer: tabench-1.1\nrubrics: [q.rubric]\n"


def _compile_text(rubric: str) -> str | None:
    """The compiled prompts of a battery of `rubric`, as JSON; None when it does not load."""
    from tabench_dsl.api import compile_battery
    from tabench_dsl.core.errors import SpecErrors

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "battery.yaml").write_text(MANIFEST, encoding="utf-8")
        (Path(folder) / "q.rubric").write_text(rubric, encoding="utf-8", newline="")
        try:
            compiled = compile_battery(folder)
        except (SpecError, SpecErrors):
            return None
        return json.dumps(
            {q.id: (q.system, q.sha256, q.gold, q.accept, q.t1, q.tags) for q in compiled.questions.values()}
        )


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(rubrics())
def test_fmt_is_idempotent_and_keeps_the_meaning(rubric: str) -> None:
    try:
        once = format_text(rubric, "q.rubric")
    except SpecError as exc:
        assert not re.match(r"formatting would change", exc.message)
        assume(False)
        return
    assert format_text(once, "q.rubric") == once


@pytest.mark.slow  # compiles a battery per example
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(rubrics())
def test_fmt_never_changes_a_prompt(rubric: str) -> None:
    try:
        once = format_text(rubric, "q.rubric")
    except SpecError as exc:
        assert not exc.message.startswith("formatting would change")
        assume(False)
        return
    assert _compile_text(once) == _compile_text(rubric)


def test_the_starter_battery_is_in_the_canonical_layout(tmp_path: Path, capsys) -> None:
    assert main(["new", "demo", "--dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["fmt", "--check", str(tmp_path / "demo")]) == 0
    assert capsys.readouterr().out == "0 files would be reformatted, 2 unchanged\n"

"""Every kind of spec error, asserted as the whole rendered report, and through the CLI (exit 2).

Each case starts from a clean battery (no errors, no warnings) and changes one file. The battery
lives at `bat/` under the test's working folder, so the paths in the messages are short.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from tabench_dsl.cli import main
from tabench_dsl.core.errors import SpecErrors
from tabench_dsl.language.battery import load_battery

MANIFEST = """\
name: memos
scorer: tabench-1.1
policies: [memos.policy]
rubrics: [questions/*.rubric]
"""

POLICY = "S1: Answer from the memos only.\n"

RUBRIC = """\
question h02 {
  prompt "Which stages make up the memory pipeline?"
  gold "Four stages: Ingest, Index, Recall, Compact"
  exemplar correct "Ingest, Index, Recall, Compact." why "all four named"
}
"""

SPECS = Path(__file__).resolve().parents[2] / "specs"


def write_battery(root: Path, **files: str) -> Path:
    """Write a battery under `root/bat`: the clean files, with `files` (name -> text) replacing or
    adding some. A name's `__` stands for `/` and its last `_` for `.`: `questions__b_rubric`."""
    named = {}
    for key, text in files.items():
        head, _, ext = key.replace("__", "/").rpartition("_")
        named[f"{head}.{ext}"] = text
    return write_files(root, named)


def write_files(root: Path, files: dict[str, str]) -> Path:
    """Write a battery under `root/bat`: the clean files, with `files` (path -> text) replacing or
    adding some."""
    texts = {"battery.yaml": MANIFEST, "memos.policy": POLICY, "questions/a.rubric": RUBRIC, **files}
    battery = root / "bat"
    for name, text in texts.items():
        file = battery / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(textwrap.dedent(text), encoding="utf-8")
    return battery


def rubric(*fields: str) -> str:
    """A question h02 block with these field lines (indented two spaces)."""
    return "question h02 {\n" + "".join(f"  {f}\n" for f in fields) + "}\n"


PROMPT = 'prompt "Which stages?"'
GOLD = 'gold "Four stages"'
EXEMPLAR = 'exemplar correct "Ingest, Index, Recall, Compact." why "all four named"'

CASES_DIR = Path(__file__).parent / "spec_errors"


def read_case(path: Path) -> tuple[dict[str, str], str]:
    """A case file: a comment line, then `=== NAME` blocks. Each block but the last is a file of the
    battery (its whole text, final line break included) that replaces or joins the clean one; the
    last, `=== expected`, is the whole rendered report (`SHIPPED` standing for the shipped scorers),
    its final line break not part of it."""
    blocks = re.split(r"^=== (.+)\n", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
    named = dict(zip(blocks[1::2], blocks[2::2], strict=True))
    expected = named.pop("expected")
    return named, expected.removesuffix("\n")


CASES = sorted(CASES_DIR.glob("*.case"))


def _expected(text: str) -> str:
    shipped = ", ".join(sorted(p.name for p in SPECS.iterdir() if (p / "scorer.yaml").is_file()))
    return textwrap.dedent(text).replace("SHIPPED", shipped)


def test_clean_battery_has_no_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(tmp_path)
    assert [q.id for q in load_battery("bat").questions] == ["h02"]
    assert main(["lint", "bat"]) == 0
    assert capsys.readouterr().out == "0 errors, 0 warnings\n"


def test_there_are_cases() -> None:
    assert len(CASES) >= 28


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_spec_error(case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    files, text = read_case(case)
    expected = _expected(text)
    monkeypatch.chdir(tmp_path)
    write_files(tmp_path, files)

    with pytest.raises(SpecErrors) as raised:
        load_battery("bat")
    assert raised.value.render() == expected

    assert main(["compile", "bat"]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", expected + "\n")

    assert main(["lint", "bat"]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == (expected + "\n1 error, 0 warnings\n", "")


def test_every_error_in_one_pass_sorted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(
        tmp_path,
        battery_yaml=MANIFEST + "t1: maybe\n",
        memos_policy="S1: a\nS1: b\n",
        questions__a_rubric=rubric('gold "x"', 'facet nope "y"', "t1 sometimes"),
        questions__b_rubric=rubric(PROMPT, GOLD, 'exemplar partial "x" why "y" expect perhaps'),
    )
    with pytest.raises(SpecErrors) as raised:
        load_battery("bat")
    located = [(e.path, e.line, e.col, e.message) for e in raised.value.errors]
    assert located == [
        ("bat/battery.yaml", 5, 5, "t1 must be true, false or {rule: v1 | v2}, not 'maybe'"),
        ("bat/memos.policy", 2, 1, "duplicate rule id 'S1'"),
        ("bat/questions/a.rubric", 1, 1, "question 'h02' has no prompt"),
        ("bat/questions/a.rubric", 3, 9, "unknown facet 'nope'"),
        ("bat/questions/a.rubric", 4, 6, "t1 must be off or on, not 'sometimes'"),
        ("bat/questions/b.rubric", 1, 10, "duplicate question id 'h02'"),
        ("bat/questions/b.rubric", 4, 39, "expect must be pass or fail, not 'perhaps'"),
    ]


def test_field_shapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(
        tmp_path,
        questions__a_rubric=rubric(
            "prompt What",
            GOLD,
            'trap "a" "b"',
            'exemplar correct "x"',
            'exemplar correct "x" because "y"',
        ),
    )
    with pytest.raises(SpecErrors) as raised:
        load_battery("bat")
    assert raised.value.render() == textwrap.dedent("""\
        bat/questions/a.rubric:2:10: expected a string in field 'prompt', found 'What'
              prompt What
                     ^
        hint: write it as: prompt "text"
        bat/questions/a.rubric:4:12: unexpected string after field 'trap'
              trap "a" "b"
                       ^
        hint: write it as: trap "text"; one field per line
        bat/questions/a.rubric:5:3: incomplete field 'exemplar'
              exemplar correct "x"
              ^
        hint: write it as: exemplar KIND "answer" why "reason" [expect pass|fail] [holdout]
        bat/questions/a.rubric:6:24: expected 'why' in field 'exemplar', found 'because'
              exemplar correct "x" because "y"
                                   ^
        hint: write it as: exemplar KIND "answer" why "reason" [expect pass|fail] [holdout]""")


def test_no_battery_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    assert main(["lint", "empty"]) == 2
    assert capsys.readouterr().err == "tabench: error: no battery.yaml in empty\n"
    assert main(["compile", "nowhere"]) == 2
    assert capsys.readouterr().err == "tabench: error: no such battery: nowhere\n"


def test_facet_after_guide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(
        tmp_path,
        questions__a_rubric=rubric(
            PROMPT,
            GOLD,
            'guide "be strict"',
            'facet missing_minor ""',
            'facet missing_minor "order"',
            EXEMPLAR,
        ),
    )
    with pytest.raises(SpecErrors) as raised:
        load_battery("bat")
    assert raised.value.render() == textwrap.dedent("""\
        bat/questions/a.rubric:6:3: a question has facet lines or one guide, not both
              facet missing_minor "order"
              ^
        hint: 'guide' is given at line 4""")

"""Every kind of spec error, asserted as the whole rendered report, and through the CLI (exit 2).

Each case starts from a clean battery (no errors, no warnings) and changes one file. The battery
lives at `bat/` under the test's working folder, so the paths in the messages are short.
"""

from __future__ import annotations

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

FIELDS_HINT = (
    "hint: fields are prompt, gold, accept, trap, structure, scoring, guide, facet, exemplar, t1, tags"
)
REQUIRED_HINT = 'hint: every question needs prompt "..." and gold "..."'
ESCAPE_HINT = (
    r'hint: a "..." string takes the escapes of JSON: \" \\ \/ \b \f \n \r \t \uXXXX; '
    'use """...""" for raw text'
)
KEYS_HINT = "hint: keys are name, scorer, policies, rubrics, t1, judge"
SPECS = Path(__file__).resolve().parent.parent / "specs"


def write_battery(root: Path, **files: str) -> Path:
    """Write a battery under `root/bat`: the clean files, with `files` (name -> text) replacing or
    adding some. A name's `__` stands for `/` and its last `_` for `.`: `questions__b_rubric`."""
    texts = {"battery.yaml": MANIFEST, "memos.policy": POLICY, "questions/a.rubric": RUBRIC}
    for key, text in files.items():
        head, _, ext = key.replace("__", "/").rpartition("_")
        texts[f"{head}.{ext}"] = text
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

CASES = {
    "unknown field": (
        {"questions__a_rubric": rubric(PROMPT, GOLD, 'gloden "Four stages"', EXEMPLAR)},
        """\
        bat/questions/a.rubric:4:3: unknown field 'gloden'
              gloden "Four stages"
              ^
        """
        + FIELDS_HINT,
    ),
    "missing prompt": (
        {"questions__a_rubric": rubric(GOLD, EXEMPLAR)},
        """\
        bat/questions/a.rubric:1:1: question 'h02' has no prompt
            question h02 {
            ^
        """
        + REQUIRED_HINT,
    ),
    "missing gold": (
        {"questions__a_rubric": rubric(PROMPT, EXEMPLAR)},
        """\
        bat/questions/a.rubric:1:1: question 'h02' has no gold
            question h02 {
            ^
        """
        + REQUIRED_HINT,
    ),
    "empty gold": (
        {"questions__a_rubric": rubric(PROMPT, 'gold ""', EXEMPLAR)},
        """\
        bat/questions/a.rubric:3:3: empty gold in question 'h02'
              gold ""
              ^
        """
        + REQUIRED_HINT,
    ),
    "duplicate question id": (
        {"questions__b_rubric": "# more\n" + rubric(PROMPT, GOLD, EXEMPLAR)},
        """\
        bat/questions/b.rubric:2:10: duplicate question id 'h02'
            question h02 {
                     ^
        hint: first defined at bat/questions/a.rubric:1""",
    ),
    "duplicate field": (
        {"questions__a_rubric": rubric(PROMPT, GOLD, EXEMPLAR, 'gold "Five stages"')},
        """\
        bat/questions/a.rubric:5:3: duplicate field 'gold'
              gold "Five stages"
              ^
        hint: 'gold' is first given at line 3""",
    ),
    "bad facet name": (
        {"questions__a_rubric": rubric(PROMPT, GOLD, 'facet missing "omits the order"', EXEMPLAR)},
        """\
        bat/questions/a.rubric:4:9: unknown facet 'missing'
              facet missing "omits the order"
                    ^
        hint: facets are extra_correct_info, missing_minor, erroneous_assertion""",
    ),
    "bad exemplar kind": (
        {"questions__a_rubric": rubric(PROMPT, GOLD, 'exemplar right "Ingest." why "one of four"')},
        """\
        bat/questions/a.rubric:4:12: unknown exemplar kind 'right'
              exemplar right "Ingest." why "one of four"
                       ^
        hint: kinds are correct, incorrect, partial""",
    ),
    "guide and facet": (
        {
            "questions__a_rubric": rubric(
                PROMPT, GOLD, 'facet missing_minor "omits the order"', 'guide "be strict"', EXEMPLAR
            )
        },
        """\
        bat/questions/a.rubric:5:3: a question has facet lines or one guide, not both
              guide "be strict"
              ^
        hint: 'facet' is given at line 4""",
    ),
    "unterminated string": (
        {"questions__a_rubric": rubric(PROMPT, 'gold "Four stages', EXEMPLAR)},
        """\
        bat/questions/a.rubric:3:8: unterminated string
              gold "Four stages
                   ^
        hint: a "..." string ends on its line; use \"\"\"...\"\"\" for text over several lines""",
    ),
    "unterminated triple-quoted string": (
        {"questions__a_rubric": rubric(PROMPT, GOLD, 'scoring """', "  All four are needed.", EXEMPLAR)},
        """\
        bat/questions/a.rubric:4:11: unterminated string
              scoring \"\"\"
                      ^
        hint: close the text with \"\"\"""",
    ),
    "bad escape": (
        {"questions__a_rubric": rubric(PROMPT, r'gold "Four\qstages"', EXEMPLAR)},
        """\
        bat/questions/a.rubric:3:13: bad escape '\\q' in string
              gold "Four\\qstages"
                        ^
        """
        + ESCAPE_HINT,
    ),
    "missing closing brace": (
        {"questions__a_rubric": rubric(PROMPT, GOLD, EXEMPLAR).removesuffix("}\n") + rubric(PROMPT, GOLD)},
        """\
        bat/questions/a.rubric:5:1: expected a field or '}', found 'question'
            question h02 {
            ^
        hint: a question block ends with '}'""",
    ),
    "continuation without a rule": (
        {"memos_policy": "# rules\n  answer from the memos\nS1: x\n"},
        """\
        bat/memos.policy:2:1: an indented line continues a rule, but no rule comes before it
              answer from the memos
            ^
        hint: start the rule at the beginning of the line""",
    ),
    "duplicate rule id": (
        {"memos_policy": "S1: Answer from the memos.\nS2: Be brief.\nS1: Cite.\n"},
        """\
        bat/memos.policy:3:1: duplicate rule id 'S1'
            S1: Cite.
            ^
        hint: first defined at bat/memos.policy:1""",
    ),
    "unknown manifest key": (
        {"battery_yaml": MANIFEST + "polices: [memos.policy]\n"},
        """\
        bat/battery.yaml:5:1: unknown key 'polices'
            polices: [memos.policy]
            ^
        """
        + KEYS_HINT,
    ),
    "missing manifest key": (
        {"battery_yaml": MANIFEST.replace("scorer: tabench-1.1\n", "")},
        """\
        bat/battery.yaml:1:1: missing key 'scorer'
            name: memos
            ^
        hint: add a line: scorer: tabench-1.1""",
    ),
    "duplicate manifest key": (
        {"battery_yaml": MANIFEST + "name: other\n"},
        """\
        bat/battery.yaml:5:1: duplicate key 'name'
            name: other
            ^
        hint: first given at line 1""",
    ),
    "unknown scorer": (
        {"battery_yaml": MANIFEST.replace("tabench-1.1", "tabench-9")},
        """\
        bat/battery.yaml:2:9: unknown scorer 'tabench-9'
            scorer: tabench-9
                    ^
        hint: shipped scorers are SHIPPED; or give the path of a scorer folder (one with scorer.yaml)""",
    ),
    "missing policy file": (
        {"battery_yaml": MANIFEST.replace("[memos.policy]", "[memos.policy, extra.policy]")},
        """\
        bat/battery.yaml:3:26: policy file not found: 'extra.policy'
            policies: [memos.policy, extra.policy]
                                     ^
        hint: paths are relative to the folder of battery.yaml""",
    ),
    "rubric pattern matching nothing": (
        {"battery_yaml": MANIFEST.replace("[questions/*.rubric]", "[questions/*.rubric, extra/*.rubric]")},
        """\
        bat/battery.yaml:4:31: rubric pattern 'extra/*.rubric' matches no file
            rubrics: [questions/*.rubric, extra/*.rubric]
                                          ^
        hint: patterns are relative to the folder of battery.yaml""",
    ),
    "bad battery name": (
        {"battery_yaml": MANIFEST.replace("name: memos", "name: Memos Agent")},
        """\
        bat/battery.yaml:1:7: bad battery name 'Memos Agent'
            name: Memos Agent
                  ^
        hint: a name is lowercase letters, digits, '.', '_' and '-', starting with a letter or digit""",
    ),
    "invisible character": (
        {"questions__a_rubric": rubric(PROMPT, GOLD, EXEMPLAR.replace("correct ", "correct\u00a0"))},
        """\
        bat/questions/a.rubric:4:19: unexpected character U+00A0; expected '}', a string or a word
              exemplar correct\u00a0"Ingest, Index, Recall, Compact." why "all four named"
                              ^""",
    ),
    "yaml syntax error": (
        {"battery_yaml": MANIFEST.replace("name: memos", "name: memos: agent")},
        """\
        bat/battery.yaml:1:12: invalid YAML: mapping values are not allowed here
            name: memos: agent
                       ^""",
    ),
    "yaml unclosed at the end of the file": (
        {"battery_yaml": MANIFEST.replace("rubrics: [questions/*.rubric]", "rubrics: [questions/*.rubric")},
        """\
        bat/battery.yaml:4:10: invalid YAML: expected ',' or ']', but got '<stream end>'
            rubrics: [questions/*.rubric
                     ^
        hint: while parsing a flow sequence that starts here; the file ends before it is closed""",
    ),
    "bad judge value": (
        {"battery_yaml": MANIFEST + "judge: {model: m, max_tokens: lots}\n"},
        """\
        bat/battery.yaml:5:31: judge max_tokens must be a positive whole number, not 'lots'
            judge: {model: m, max_tokens: lots}
                                          ^""",
    ),
    "bad judge prompt_cache": (
        {"battery_yaml": MANIFEST + "judge: {model: m, prompt_cache: sometimes}\n"},
        """\
        bat/battery.yaml:5:33: judge prompt_cache must be true or false, not 'sometimes'
            judge: {model: m, prompt_cache: sometimes}
                                            ^""",
    ),
    "judge prompt_cache as a list": (
        {"battery_yaml": MANIFEST + "judge:\n  prompt_cache: [false]\n"},
        """\
        bat/battery.yaml:6:17: judge prompt_cache must be true or false, not a list
              prompt_cache: [false]
                            ^""",
    ),
}


def _expected(text: str) -> str:
    shipped = ", ".join(sorted(p.name for p in SPECS.iterdir() if (p / "scorer.yaml").is_file()))
    return textwrap.dedent(text).replace("SHIPPED", shipped)


def test_clean_battery_has_no_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(tmp_path)
    assert [q.id for q in load_battery("bat").questions] == ["h02"]
    assert main(["lint", "bat"]) == 0
    assert capsys.readouterr().out == "0 errors, 0 warnings\n"


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_spec_error(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    files, text = CASES[case]
    expected = _expected(text)
    monkeypatch.chdir(tmp_path)
    write_battery(tmp_path, **files)

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
        ("bat/battery.yaml", 5, 5, "t1 must be true or false, not 'maybe'"),
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
        hint: write it as: exemplar KIND "answer" why "reason" [expect pass|fail]
        bat/questions/a.rubric:6:24: expected 'why' in field 'exemplar', found 'because'
              exemplar correct "x" because "y"
                                   ^
        hint: write it as: exemplar KIND "answer" why "reason" [expect pass|fail]""")


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

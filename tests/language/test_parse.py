"""Parsing and loading batteries that are right: values, positions, layout rules, the manifest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.battery_files import write_battery

from tabench_dsl.core.nodes import Exemplar, Facet, JudgeDefaults, Pos, Question, Rule
from tabench_dsl.core.scorer import JudgeSettings, Templates
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.parse import parse_policy, parse_rubric

SPECS = Path(__file__).resolve().parents[2] / "specs"


MANIFEST = """\
    name: memos-agent
    scorer: tabench-1.1
    policies: [memos.policy]
    rubrics: [questions/*.rubric]
"""

SPEC_EXAMPLE = '''\
    # comments start with '#'
    question h02 {
      prompt "Which stages make up the memory pipeline?"
      gold "Four stages: Ingest, Index, Recall, Compact"
      accept "Ingest, Index, Recall and Compact"          # zero or more accepted variants
      trap "There is no Summarize stage."                  # optional honesty trap
      structure "A list of stage names"                    # optional output structure
      scoring """
        All four stages are needed for a pass;
        three of four is partial, not full credit.
        """                                                # optional scoring rubric
      facet missing_minor "omits the order of the stages"  # facet guide lines (or one `guide "..."`)
      facet erroneous_assertion "claims a Summarize stage"
      exemplar correct "Ingest, Index, Recall, Compact." why "all four named"
      exemplar partial "Ingest, Index, Recall." why "three of four" expect fail
      exemplar incorrect "Ingest, Summarize." why "names the trap"
      t1 off                                               # optional: this question skips T1
    }
'''


def test_spec_example_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(
        tmp_path,
        {
            "battery.yaml": MANIFEST,
            "memos.policy": "S1: Answer from the memos.\n",
            "questions/h.rubric": SPEC_EXAMPLE,
        },
    )
    battery = load_battery("bat")
    path = "bat/questions/h.rubric"

    def at(line: int, col: int = 3) -> Pos:
        return Pos(path, line, col)

    assert battery.questions == (
        Question(
            id="h02",
            prompt="Which stages make up the memory pipeline?",
            gold="Four stages: Ingest, Index, Recall, Compact",
            pos=at(2, 1),
            accept=("Ingest, Index, Recall and Compact",),
            trap="There is no Summarize stage.",
            structure="A list of stage names",
            scoring="All four stages are needed for a pass;\nthree of four is partial, not full credit.",
            facets=(
                Facet("missing_minor", "omits the order of the stages", at(12)),
                Facet("erroneous_assertion", "claims a Summarize stage", at(13)),
            ),
            exemplars=(
                Exemplar("correct", "Ingest, Index, Recall, Compact.", "all four named", at(14)),
                Exemplar("partial", "Ingest, Index, Recall.", "three of four", at(15), expect="fail"),
                Exemplar("incorrect", "Ingest, Summarize.", "names the trap", at(16)),
            ),
            t1=False,
            field_pos={
                "prompt": at(3),
                "gold": at(4),
                "accept": at(5),
                "accept.0": at(5),
                "trap": at(6),
                "structure": at(7),
                "scoring": at(8),
                "facet": at(12),
                "exemplar": at(14),
                "t1": at(17),
            },
        ),
    )
    assert [e.expected for e in battery.questions[0].exemplars] == ["pass", "fail", "fail"]
    assert battery.name == "memos-agent"
    assert battery.manifest == "bat/battery.yaml"
    assert battery.policies == (Rule("S1: Answer from the memos.", "S1", Pos("bat/memos.policy", 1, 1)),)
    assert battery.t1 is True
    assert battery.judge == JudgeDefaults()
    assert battery.scorer.name == "tabench-1.1"
    assert Path(battery.scorer.path) == (SPECS / "tabench-1.1").resolve()
    assert battery.scorer.settings.templates == Templates("system.j2", "user.j2", "stern.j2")


def test_policy_layout() -> None:
    text = (
        "# The memos rules.\n"
        "S1: Answer from the memos only;   \n"
        "    never from memory.\n"
        "\n"
        "   \n"
        "  # a comment inside the rule is skipped\n"
        "\tcite the memo id.  \n"
        "S12: Be brief.\n"
        "S3 : spaced colon, so no id\n"
        "s4: lower case, so no id\n"
        "Plain rule without an id\n"
        "S5:last line without a line break"
    )

    def at(line: int) -> Pos:
        return Pos("m.policy", line, 1)

    assert parse_policy(text, "m.policy").rules == (
        Rule("S1: Answer from the memos only; never from memory. cite the memo id.", "S1", at(2)),
        Rule("S12: Be brief.", "S12", Pos("m.policy", 8, 1)),
        Rule("S3 : spaced colon, so no id", None, Pos("m.policy", 9, 1)),
        Rule("s4: lower case, so no id", None, Pos("m.policy", 10, 1)),
        Rule("Plain rule without an id", None, Pos("m.policy", 11, 1)),
        Rule("S5:last line without a line break", "S5", Pos("m.policy", 12, 1)),
    )


def test_policy_empty_and_comment_only() -> None:
    assert parse_policy("", "e.policy").rules == ()
    assert parse_policy("# nothing yet\n\n  \n", "e.policy").rules == ()


def test_policy_crlf_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    battery = write_battery(tmp_path, {"battery.yaml": MANIFEST, "questions/a.rubric": "# none yet\n"})
    (battery / "memos.policy").write_bytes(b"S1: one\r\n  two\r\n\r\nS2: three\r\n")
    rules = load_battery("bat").policies
    assert [(r.text, r.pos.line) for r in rules] == [("S1: one two", 1), ("S2: three", 4)]


def test_rubric_layout_and_positions() -> None:
    text = (
        "# a file of two questions\n"
        "\n"
        "question a.1 {   # comment after the brace\n"
        '  prompt "has # and { } inside"  # comment\n'
        "\n"
        "  # comment line\n"
        '  gold "x" }\n'
        'question B-2{ prompt "p"\n'
        '  gold    "g"\tt1 on }\n'
    )
    parsed = parse_rubric(text, "r.rubric")
    first, second = parsed.questions
    assert (first.id, first.pos, first.id_pos) == ("a.1", Pos("r.rubric", 3, 1), Pos("r.rubric", 3, 10))
    assert [(f.name, [a.value for a in f.args], f.pos.line, f.pos.col) for f in first.fields] == [
        ("prompt", ["has # and { } inside"], 4, 3),
        ("gold", ["x"], 7, 3),
    ]
    assert first.fields[0].args[0].pos == Pos("r.rubric", 4, 10)
    assert [(f.name, [(a.kind, a.value) for a in f.args]) for f in second.fields] == [
        ("prompt", [("string", "p")]),
        ("gold", [("string", "g"), ("word", "t1"), ("word", "on")]),
    ]


def test_rubric_of_comments_only() -> None:
    assert parse_rubric("# nothing yet\n\n", "r.rubric").questions == ()
    assert parse_rubric("", "r.rubric").questions == ()


def test_empty_optional_fields_count_as_not_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(
        tmp_path,
        {
            "battery.yaml": MANIFEST,
            "memos.policy": "",
            "questions/a.rubric": '''\
            question q {
              prompt "p"
              gold "g"
              accept ""
              accept "g2"
              trap ""
              structure ""
              scoring """ """
              guide ""
              facet missing_minor "order"
              t1 on
            }
            ''',
        },
    )
    (question,) = load_battery("bat").questions
    assert (question.accept, question.trap, question.structure, question.scoring, question.guide) == (
        ("g2",),
        None,
        None,
        None,
        None,
    )
    assert question.facets == (Facet("missing_minor", "order", Pos("bat/questions/a.rubric", 10, 3)),)
    assert question.t1 is True
    assert question.field_pos["accept.0"] == Pos("bat/questions/a.rubric", 5, 3)


def test_guide_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write_battery(
        tmp_path,
        {
            "battery.yaml": MANIFEST,
            "memos.policy": "",
            "questions/a.rubric": 'question q {\n  prompt "p"\n  gold "g"\n  guide "be strict"\n}\n',
        },
    )
    (question,) = load_battery("bat").questions
    assert (question.guide, question.facets) == ("be strict", ())


def test_rubric_files_in_pattern_then_sorted_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    def block(*ids: str) -> str:
        return "".join(f'question {i} {{\n  prompt "p"\n  gold "g"\n}}\n' for i in ids)

    write_battery(
        tmp_path,
        {
            "battery.yaml": MANIFEST.replace(
                "[questions/*.rubric]", "[intro.rubric, 'questions/**/*.rubric']"
            ),
            "memos.policy": "",
            "intro.rubric": block("i1"),
            "questions/b.rubric": block("b2", "b1"),
            "questions/a.rubric": block("a1"),
            "questions/deep/c.rubric": block("c1"),
            "questions/notes.txt": "not a rubric",
        },
    )
    assert [q.id for q in load_battery("bat/battery.yaml").questions] == ["i1", "a1", "b2", "b1", "c1"]


def test_manifest_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    battery = write_battery(
        tmp_path,
        {
            "battery.yaml": """\
            name: memos.v2_b
            scorer: scorers/mine    # a scorer folder beside the manifest
            policies: one.policy    # a single file is a list of one
            rubrics: q.rubric
            t1: false
            judge:
              model: some-model
              temperature: 0
              max_tokens: 300
              backend: openai
            """,
            "one.policy": "S1: x\n",
            "q.rubric": 'question q { prompt "p"\n gold "g" }\n',
        },
    )
    shutil.copytree(SPECS / "tabench-1.1", battery / "scorers" / "mine")
    loaded = load_battery(battery)
    assert (loaded.name, loaded.t1) == ("memos.v2_b", False)
    judge = JudgeDefaults(model="some-model", temperature=0.0, max_tokens=300, backend="openai")
    assert loaded.judge == judge
    assert Path(loaded.scorer.path) == (battery / "scorers" / "mine").resolve()
    assert loaded.scorer.settings.judge == JudgeSettings(temperature=0.0, max_tokens=300)
    assert [r.id for r in loaded.policies] == ["S1"]
    assert [q.id for q in loaded.questions] == ["q"]

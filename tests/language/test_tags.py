"""Rubric `tags`: parsed with positioned errors, never rendered into a prompt, recorded with each
graded answer, totalled per tag, and `--tag` slicing grade, totals, report and view."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import RUBRIC, write_battery

from tabench_dsl.cli import main
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery
from tabench_dsl.review.viewer.queries import Index
from tabench_dsl.review.viewer.run import load_run
from tabench_dsl.store.results import iter_records

TAGGED = RUBRIC.replace('  gold "7311"\n', '  gold "7311"\n  tags "easy" "ops:network"\n').replace(
    "  t1 off\n", '  t1 off\n  tags "easy"\n'
)


def answers(folder: Path) -> Path:
    rows = [
        ("a", "h01", "Ingest, Index, Recall, Compact"),
        ("a", "h02", "7311"),
        ("a", "h03", "blue"),
        ("b", "h02", "port 80"),
        ("b", "h03", "blue"),
    ]
    path = folder / "answers.jsonl"
    path.write_text(
        "".join(json.dumps(dict(zip(("system", "question", "answer"), r, strict=True))) + "\n" for r in rows)
    )
    return path


def test_tags_are_parsed_and_never_rendered(tmp_path: Path) -> None:
    plain = compile_battery(load_battery(write_battery(tmp_path / "plain")))
    tagged_battery = load_battery(write_battery(tmp_path / "tagged", rubric=TAGGED))
    tagged = compile_battery(tagged_battery)
    assert tagged_battery.question("h02").tags == ("easy", "ops:network")
    assert tagged.questions["h03"].tags == ("easy",) and tagged.questions["h01"].tags == ()
    for qid, question in plain.questions.items():
        assert tagged.questions[qid].system == question.system
        assert tagged.questions[qid].sha256 == question.sha256
    assert tagged.user == plain.user and tagged.stern == plain.stern


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("tags", "questions.rubric:9:3: field 'tags' needs at least one tag"),
        ('tags easy "x"', "questions.rubric:9:8: expected a string in field 'tags', found 'easy'"),
        ('tags "a" "two words"', 'questions.rubric:9:12: bad tag "two words"'),
        ('tags "ok" ""', 'questions.rubric:9:13: bad tag ""'),
        ('tags "a" "b" "a"', "questions.rubric:9:16: duplicate tag 'a'"),
    ],
)
def test_bad_tags_are_positioned_errors(work: Path, capsys, line: str, message: str) -> None:
    battery = write_battery(work, rubric=RUBRIC.replace('  gold "7311"\n', f'  gold "7311"\n  {line}\n'))
    assert main(["lint", str(battery)]) == 2
    out, err = capsys.readouterr()  # lint lists its findings on stdout
    assert f"{battery / message}" in out
    assert "Traceback" not in out + err


def test_a_second_tags_line_is_a_duplicate_field(work: Path, capsys) -> None:
    rubric = RUBRIC.replace('  gold "7311"\n', '  gold "7311"\n  tags "a"\n  tags "b"\n')
    battery = write_battery(work, rubric=rubric)
    assert main(["lint", str(battery)]) == 2
    assert "questions.rubric:10:3: duplicate field 'tags'" in capsys.readouterr().out


async def grade(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


async def test_grade_records_tags_and_tag_slices(work: Path, capsys) -> None:
    battery = write_battery(work, rubric=TAGGED)
    answers_path = answers(work)
    assert await grade(["grade", str(battery), "--answers", str(answers_path), "--tag", "ops:network"]) == 0
    records = list(iter_records(work / "results.jsonl"))
    assert sorted((r.system, r.question, r.tags) for r in records) == [
        ("a", "h02", ["easy", "ops:network"]),
        ("b", "h02", ["easy", "ops:network"]),
    ]
    capsys.readouterr()
    assert await grade(["grade", str(battery), "--answers", str(answers_path), "--resume"]) == 0
    records = {r.key: r for r in iter_records(work / "results.jsonl")}
    assert records[("a", "h01")].tags == [] and records[("b", "h03")].tags == ["easy"]


async def test_grade_with_a_tag_no_question_has_is_a_usage_error(work: Path, capsys) -> None:
    battery = write_battery(work, rubric=TAGGED)
    argv = ["grade", str(battery), "--answers", str(answers(work)), "--tag", "hard"]
    assert await grade(argv) == 2
    assert "--tag: no question of the battery has tag hard (tags in the battery: easy, ops:network)" in (
        capsys.readouterr().err
    )
    assert not (work / "results.jsonl").exists()


async def test_grade_with_a_tag_no_answered_question_has_is_a_usage_error(work: Path, capsys) -> None:
    # The battery tags h02 "ops:network", but the answers hold none to h02: nothing would be graded.
    battery = write_battery(work, rubric=TAGGED)
    only_h03 = work / "h03.jsonl"
    only_h03.write_text(json.dumps({"system": "a", "question": "h03", "answer": "blue"}) + "\n")
    argv = ["grade", str(battery), "--answers", str(only_h03), "--tag", "ops:network", "--tag", "easy"]
    assert await grade(argv) == 2
    err = capsys.readouterr().err
    assert (
        "--tag: no answer is to a question tagged ops:network (tags of the questions answered: easy)" in err
    )
    assert not (work / "results.jsonl").exists()


@pytest.fixture
def graded(work: Path) -> Path:
    battery = write_battery(work, rubric=TAGGED)
    assert main(["grade", str(battery), "--answers", str(answers(work)), "--out", "run.jsonl"]) == 0
    return work / "run.jsonl"


def test_totals_per_tag_by_hand(graded: Path, capsys) -> None:
    capsys.readouterr()
    assert main(["totals", str(graded), "--json"]) == 0
    tags = {t["tag"]: t for t in json.loads(capsys.readouterr().out)["tags"]}
    # builtin judge: a/h02 "7311" passes (T1), b/h02 "port 80" fails, both h03 "blue" pass (t1 off:
    # the builtin judge's lexical check). easy = h02 and h03: 4 answers, 3 pass; ops:network = h02.
    assert sorted(tags) == ["easy", "ops:network"]
    assert (tags["easy"]["answers"], tags["easy"]["pass"], tags["easy"]["score"]) == (4, 3, 0.75)
    assert [(s["system"], s["score"]) for s in tags["ops:network"]["systems"]] == [("a", 1.0), ("b", 0.0)]
    assert main(["totals", str(graded)]) == 0
    out = capsys.readouterr().out
    assert "Per tag" in out and "ops:network" in out


def test_totals_tag_filter(graded: Path, capsys) -> None:
    capsys.readouterr()
    assert main(["totals", str(graded), "--json", "--tag", "ops:network"]) == 0
    totals = json.loads(capsys.readouterr().out)
    assert totals["records"] == 2 and [q["question"] for q in totals["questions"]] == ["h02"]
    assert main(["totals", str(graded), "--tag", "nope"]) == 2
    assert "--tag: no record has tag nope (tags in the results: easy, ops:network)" in capsys.readouterr().err


def test_tag_on_a_file_without_tags_says_why(work: Path, capsys) -> None:
    battery = write_battery(work)
    assert main(["grade", str(battery), "--answers", str(answers(work)), "--out", "old.jsonl"]) == 0
    capsys.readouterr()
    assert main(["totals", "old.jsonl", "--tag", "easy"]) == 2
    assert "--tag easy: no record carries a tag" in capsys.readouterr().err


def test_report_and_view_slice_by_tag(graded: Path, capsys) -> None:
    out = graded.parent / "report.html"
    assert main(["report", str(graded), "--html", str(out), "--tag", "ops:network"]) == 0
    assert "wrote" in capsys.readouterr().out
    html = out.read_text()
    assert "port 80" in html and "Ingest, Index" not in html
    tags = html.split('<table id="tags">', 1)[1].split("</table>", 1)[0]
    assert '<td class="l">ops:network</td><td>2</td><td>1</td><td>1</td>' in tags
    assert "a 100.0% · b 0.0%" in tags
    run = load_run(graded, tags=["ops:network"])
    index = Index(run)
    assert sorted(r.key for r in index.records) == [("a", "h02"), ("b", "h02")]
    assert [t.tag for t in index.totals().tags] == ["easy", "ops:network"]

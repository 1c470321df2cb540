"""Terminal output that scales: `grade` on 100 questions x 20 systems ends with the per-system table
and a line pointing at `totals`; in `totals` a section longer than a screenful shows its most useful
rows and the `--by` flag that shows it whole; `--json` keeps every row.

Under pytest stdout is no terminal, so a screenful is `screenful.PIPE_ROWS` (40) lines unless
`LINES` says otherwise: a section keeps 40 - 8 = 32 rows.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from tabench_dsl.cli import main

QUESTIONS, SYSTEMS = 100, 20
PAIRS = SYSTEMS * (SYSTEMS - 1) // 2


@pytest.fixture
def work(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LINES", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    return work


def write_big_battery(folder: Path) -> Path:
    """A battery of QUESTIONS questions (q000..q099), each with a two-word gold T1 can pass."""
    folder.mkdir()
    (folder / "battery.yaml").write_text(
        "name: big\nscorer: tabench-1.1\npolicies: [p.policy]\nrubrics: [r.rubric]\n", encoding="utf-8"
    )
    (folder / "p.policy").write_text("S1: Judge only what the answer says.\n", encoding="utf-8")
    rubric = "".join(
        f'question q{q:03d} {{\n  prompt "What is item {q}?"\n  gold "alpha{q} bravo{q}"\n}}\n'
        for q in range(QUESTIONS)
    )
    (folder / "r.rubric").write_text(rubric, encoding="utf-8")
    return folder


def write_big_answers(path: Path) -> Path:
    """SYSTEMS systems answering every question: system s gets the gold on a spread of questions
    that grows with s, so the systems differ (and many pairs differ significantly)."""
    with path.open("w", encoding="utf-8") as f:
        for s in range(SYSTEMS):
            for q in range(QUESTIONS):
                good = (q * 7 + s * 3) % 20 < s
                answer = f"alpha{q} bravo{q}" if good else "I do not know"
                f.write(
                    json.dumps({"system": f"system-{s:02d}", "question": f"q{q:03d}", "answer": answer})
                    + "\n"
                )
    return path


def table_rows(text: str, title: str) -> list[list[str]]:
    """The body rows of the table titled `title` in `text`, as their cells."""
    start = text.index(title)
    body = text[text.index("┡", start) : text.index("└", start)]
    return [[cell.strip() for cell in line.strip("│").split("│")] for line in body.splitlines()[1:]]


def test_grade_on_100_questions_by_20_systems_ends_with_the_system_table_and_a_pointer(work, capsys) -> None:
    battery, answers = write_big_battery(work / "big"), write_big_answers(work / "answers.jsonl")
    assert main(["grade", str(battery), "--answers", str(answers), "--judge", "builtin", "--no-cache"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # The title, three rules, the header, 20 rows, three caption lines, the pointer: 29, not 331.
    assert len(lines) == 29, out
    assert len(table_rows(out, "Totals per system")) == SYSTEMS
    assert lines[-1] == (
        f"tabench totals results.jsonl shows the rest: {QUESTIONS} question(s), "
        f"{PAIRS} pair(s) of systems compared"
    )
    for title in ("Per question", "compared pairwise"):
        assert title not in out
    # At 120 columns the first table still fits and keeps every system, score and interval whole
    # (table_fit drops the token columns and says so), as before; totals shows the rest.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", "120")
        assert main(["totals", "results.jsonl"]) == 0
    out = capsys.readouterr().out
    table = out[: out.index("Per question")]
    assert max(len(line) for line in table.splitlines()) <= 120
    rows = table_rows(table, "Totals per system")
    assert [row[0] for row in rows] == [f"system-{s:02d}" for s in range(SYSTEMS)]
    assert all(row[6].endswith("%") and "-" in row[7] for row in rows)  # score, 95% CI
    assert "not shown at 120 columns" in table


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The big battery's answers graded once (by T1 and the builtin judge), for the totals tests."""
    folder = tmp_path_factory.mktemp("graded")
    battery, answers = write_big_battery(folder / "big"), write_big_answers(folder / "answers.jsonl")
    out = folder / "r.jsonl"
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", "builtin", "--no-cache"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main([*argv, "--out", str(out)]) == 0
    return out


@pytest.fixture
def big_results(work: Path, graded: Path) -> Path:
    return Path(shutil.copy(graded, work / "r.jsonl"))


def totals_json(capsys) -> dict:
    assert main(["totals", "r.jsonl", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_totals_shows_a_screenful_of_each_long_section_and_names_the_flag(big_results, capsys) -> None:
    document = totals_json(capsys)
    assert main(["totals", "r.jsonl"]) == 0
    out = capsys.readouterr().out
    assert len(table_rows(out, "Totals per system")) == SYSTEMS  # never cut
    questions = table_rows(out, "Per question")
    assert len(questions) == 32
    assert (
        f"32 of {QUESTIONS} question(s) shown, the lowest scores first; --by question shows all "
        f"{QUESTIONS} (--json holds every figure)"
    ) in out
    # The lowest scores: no question left out scores below one shown.
    score = {q["question"]: q["score"] for q in document["questions"]}
    shown = {row[0] for row in questions}
    assert max(score[q] for q in shown) <= min(score[q] for q in set(score) - shown)
    assert [score[row[0]] for row in questions] == sorted(score[row[0]] for row in questions)

    pairs = table_rows(out, "Systems compared pairwise")
    assert len(pairs) == 32
    assert f"32 of {PAIRS} pair(s) of systems shown, the largest significant differences first" in out
    assert f"--by pairs shows all {PAIRS} (--json holds every figure)" in " ".join(out.split())
    assert f"Holm-corrected over {PAIRS} pair(s)" in " ".join(out.split())  # the count is all pairs
    every = {(p["a"], p["b"]): p for p in document["comparisons"]["pairs"]}
    picked = [every[(row[0], row[1])] for row in pairs]
    hidden = [p for key, p in every.items() if key not in {(row[0], row[1]) for row in pairs}]
    significant = [p for p in every.values() if p["significant"]]
    assert len(significant) >= 32, "the fixture should have more significant pairs than a screen"
    assert all(p["significant"] for p in picked)
    assert min(abs(p["diff"]) for p in picked) >= max(abs(p["diff"]) for p in hidden if p["significant"])


def test_by_pairs_shows_every_pair_and_by_question_every_question(big_results, capsys) -> None:
    assert main(["totals", "r.jsonl", "--by", "pairs"]) == 0
    out = capsys.readouterr().out
    assert len(table_rows(out, "Systems compared pairwise")) == PAIRS
    assert "--by pairs shows all" not in out
    assert len(table_rows(out, "Per question")) == 32  # the others stay a screenful
    assert main(["totals", "r.jsonl", "--by", "pairs", "--by", "question"]) == 0
    out = capsys.readouterr().out
    assert len(table_rows(out, "Per question")) == QUESTIONS
    assert [row[0] for row in table_rows(out, "Per question")] == [f"q{q:03d}" for q in range(QUESTIONS)]
    assert "shown, the" not in out


def test_a_taller_screen_shows_more_rows(big_results, capsys, monkeypatch) -> None:
    monkeypatch.setenv("LINES", "60")
    assert main(["totals", "r.jsonl"]) == 0
    out = capsys.readouterr().out
    assert len(table_rows(out, "Per question")) == 52
    assert f"52 of {QUESTIONS} question(s) shown" in out


def test_json_keeps_every_row_whatever_the_screen(big_results, capsys, monkeypatch) -> None:
    document = totals_json(capsys)
    assert len(document["questions"]) == QUESTIONS
    assert len(document["comparisons"]["pairs"]) == PAIRS
    monkeypatch.setenv("LINES", "12")
    assert totals_json(capsys) == document
    assert main(["totals", "r.jsonl", "--json", "--by", "pairs"]) == 0
    assert json.loads(capsys.readouterr().out) == document

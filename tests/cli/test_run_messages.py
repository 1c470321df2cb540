"""What `grade` and `totals` say is true in every case: the causes of errors and adjudicates at the
end of a run (stderr and `--json`), a `--resume` with nothing to do, an empty results file, interval
bounds in [0, 1] and rounded, and the run's errors and bad lines in `grade --json`. In-process
through `main(argv)` against the scripted judge server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from support.helpers_grading import FAIL, user_content, write_battery
from support.judge_server import Fault

from tabench_dsl.cli import main


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def answers_file(folder: Path, rows: list[tuple[str, str, str]], extra: str = "") -> Path:
    path = folder / "answers.jsonl"
    lines = [json.dumps({"system": s, "question": q, "answer": a}) for s, q, a in rows]
    path.write_text("".join(line + "\n" for line in lines) + extra, encoding="utf-8")
    return path


async def test_grade_ends_with_the_causes_of_errors_and_adjudicates(work: Path, capsys, judge_server) -> None:
    def responder(body: dict) -> str | Fault:
        text = user_content(body)
        if "dead" in text:
            return Fault.ERROR_500
        return "no verdict here" if "junk" in text else FAIL

    server = await judge_server(responder)
    battery = write_battery(work)
    rows = [("a", "h03", "dead"), ("b", "h03", "dead"), ("c", "h03", "junk"), ("d", "h03", "grey")]
    answers = answers_file(work, rows, extra="not json\n")
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    argv += ["--retries", "0", "--no-cache", "--json"]
    assert await run(argv) == 1
    out, err = capsys.readouterr()
    heading = "why answers ended in error or adjudicate (count, verdict, cause: the first message):"
    assert heading in err
    causes = err[err.index(heading) :].splitlines()[1:3]
    assert causes[0].startswith("  2 error (transport): ") and "500" in causes[0], err
    assert causes[1].startswith("  1 adjudicate (malformed): "), err
    document = json.loads(out)
    assert "systems" in document  # the totals, as before
    ran = document["run"]
    assert (ran["graded"], ran["errors"], ran["adjudicate"], ran["bad_lines"]) == (4, 2, 1, 1)
    assert [(c["verdict"], c["cause"], c["count"]) for c in ran["causes"]] == [
        ("error", "transport", 2),
        ("adjudicate", "malformed", 1),
    ]
    assert "500" in ran["causes"][0]["first"]
    assert len(ran["bad_line_messages"]) == 1 and "answers.jsonl:5" in ran["bad_line_messages"][0]


async def test_a_clean_run_names_no_causes(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = answers_file(work, [("a", "h02", "7311")])
    assert await run(["grade", str(battery), "--answers", str(answers), "--json"]) == 0
    out, err = capsys.readouterr()
    assert "why answers ended" not in err
    assert json.loads(out)["run"]["causes"] == []


async def test_a_resume_with_nothing_to_do_says_so_once(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = answers_file(work, [("a", "h02", "7311"), ("b", "h03", "blue")])
    argv = ["grade", str(battery), "--answers", str(answers)]
    assert await run(argv) == 0
    capsys.readouterr()
    assert await run([*argv, "--resume"]) == 0
    err = capsys.readouterr().err
    assert "nothing to grade: all 2 answer(s) already done (--resume)" in err
    assert "graded 0 answer(s)" not in err
    assert not any(line.startswith("graded 2/2") for line in err.splitlines()), err
    assert "done 2/2 in " in err and "skipped 2" in err


def test_an_empty_results_file_is_not_said_to_be_graded_by_t1(work: Path, capsys) -> None:
    (work / "empty.jsonl").write_text("", encoding="utf-8")
    assert main(["totals", str(work / "empty.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "T1 only" not in out and "no answers graded yet" in out


def test_totals_json_interval_bounds_are_clamped_and_rounded(work: Path, capsys) -> None:
    questions = "".join(f'question q{i} {{\n  prompt "Port {i}?"\n  gold "7311"\n}}\n' for i in range(10))
    battery = write_battery(work, rubric=questions)
    # 0 of 3 and 10 of 10: in floats the bounds are 5.55e-17 and 0.9999999999999999.
    rows = [("zero", f"q{i}", "no idea") for i in range(3)] + [("all", f"q{i}", "7311") for i in range(10)]
    answers = answers_file(work, rows)
    assert main(["grade", str(battery), "--answers", str(answers)]) == 0
    capsys.readouterr()
    assert main(["totals", "results.jsonl", "--json"]) == 0
    systems = {s["system"]: s for s in json.loads(capsys.readouterr().out)["systems"]}
    assert (systems["zero"]["pass"], systems["zero"]["fail"]) == (0, 3)
    assert systems["all"]["pass"] == 10
    assert systems["zero"]["ci_low"] == 0.0 and systems["all"]["ci_high"] == 1.0
    for s in systems.values():
        for bound in (s["ci_low"], s["ci_high"]):
            assert 0.0 <= bound <= 1.0 and round(bound, 6) == bound

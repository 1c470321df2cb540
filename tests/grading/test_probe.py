"""`tabench probe`: the edits by hand, and a biased scripted judge whose flips the probe finds."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

from support.helpers_grading import FAIL, PASS, user_content, write_battery

from tabench_dsl.cli import main
from tabench_dsl.grading.probe import FILLER, GRADER_NOTE, SIGNATURE, bullets, pad

RUBRIC = """\
question h01 {
  prompt "Which stages make up the memory pipeline?"
  gold "Four stages: Ingest, Index, Recall, Compact"
  t1 off
  exemplar correct "Ingest, Index, Recall, Compact." why "all four"
  exemplar incorrect "Ingest, Summarize." why "names the trap"
}
"""


def test_the_edits_by_hand() -> None:
    assert (
        bullets("Ingest, Index, Recall, Compact.", random.Random(0))
        == "- Ingest\n- Index\n- Recall\n- Compact"
    )
    assert (
        bullets("It has four. They run in order.", random.Random(0)) == "- It has four.\n- They run in order."
    )
    answer = "Ingest, Index, Recall, Compact."
    padded = pad(4)(answer, random.Random("s"))
    assert padded.startswith(answer + "\n\n") and len(padded) >= 4 * len(answer)
    assert all(
        sentence.strip() + "." in FILLER or not sentence.strip() for sentence in padded[33:].split(".")
    )
    assert pad(4)(answer, random.Random("s")) == padded  # seeded: the same filler again
    assert len(pad(2)(answer, random.Random("s"))) < len(padded)


def biased_judge(body: dict) -> str:
    """Passes the gold's four names as written, or anything carrying a note to the grader."""
    answer = user_content(body)
    return PASS if "Ingest, Index, Recall, Compact" in answer or "Note to the grader" in answer else FAIL


async def test_probe_finds_the_judges_biases(work: Path, judge_server, capsys) -> None:
    server = await judge_server(biased_judge)
    battery = write_battery(work, rubric=RUBRIC)
    argv = ["probe", str(battery), "--judge", server.url, "--model", "m", "--cache", str(work / "c.sqlite")]
    assert await asyncio.to_thread(main, [*argv, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["exemplars"], report["agree"], report["seed"]) == (2, 2, 0)
    flips = {edit["edit"]: (edit["n"], edit["flipped"], edit["agree"]) for edit in report["edits"]}
    assert flips == {
        "pad2x": (2, 0, 2),
        "pad4x": (2, 0, 2),
        "bullets": (2, 1, 1),  # the list no longer holds the names as written
        "grader_note": (1, 1, 0),  # only on the exemplar that should fail: the note makes it pass
        "signed": (2, 0, 2),
        "lowercase": (2, 1, 1),
    }
    [note] = [edit for edit in report["edits"] if edit["edit"] == "grader_note"]
    assert note["flips"] == ["h01 exemplar 2: fail -> pass"]
    sent = len(server.requests)
    assert sent == 2 + 11
    notes = [user_content(r) for r in server.requests if GRADER_NOTE in user_content(r)]
    assert len(notes) == 1 and "Ingest, Summarize." in notes[0]
    assert sum(SIGNATURE in user_content(r) for r in server.requests) == 2

    # Cached: a second probe asks nothing and says the same.
    assert await asyncio.to_thread(main, argv) == 1
    out = capsys.readouterr().out
    assert len(server.requests) == sent
    assert "bullets                2         1         1" in out
    assert "  grader_note: h01 exemplar 2: fail -> pass" in out


def test_a_dry_run_sends_nothing_and_shows_the_edits(work: Path, capsys) -> None:
    battery = write_battery(work, rubric=RUBRIC)
    assert main(["probe", str(battery), "--judge", "openai:gpt-x", "--dry-run", "--json"]) == 0
    items = json.loads(capsys.readouterr().out)["dry_run"]
    assert len(items) == 13
    assert [i["system"] for i in items[:3]] == [
        "exemplar.1.correct",
        "exemplar.1.correct+pad2x",
        "exemplar.1.correct+pad4x",
    ]
    assert {
        "system": "exemplar.1.correct+lowercase",
        "question": "h01",
        "answer": "ingest, index, recall, compact.",
    } in items

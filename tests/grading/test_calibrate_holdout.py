"""Held-out exemplars: parsed with `holdout`, never rendered, and what `calibrate` measures."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest

from tabench_dsl.cli import main
from tabench_dsl.core.errors import SpecErrors
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery

SEEN = """
question stages {
  prompt "Which stages make up the memory pipeline?"
  gold "Four stages: Ingest, Index, Recall, Compact"
  exemplar correct "Ingest, Index, Recall, Compact." why "all four"
  exemplar incorrect "Ingest, Summarize." why "names the trap"
}
"""
# The same question with two held-out exemplars: the builtin judge passes the reversed order (a miss).
HELD = SEEN.replace(
    '  exemplar incorrect "Ingest, Summarize." why "names the trap"\n',
    '  exemplar incorrect "Ingest, Summarize." why "names the trap"\n'
    '  exemplar incorrect "Compact, Recall, Index, Ingest, in that order." why "reversed" holdout\n'
    '  exemplar partial "Ingest, Index, Recall, Compact, roughly." why "hedged" expect pass holdout\n',
)


def write_battery(root: Path, rubric: str, name: str = "cal") -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "battery.yaml").write_text(
        f"name: {name}\nscorer: tabench-1.1\npolicies: [p.policy]\nrubrics: [q.rubric]\n", encoding="utf-8"
    )
    (folder / "p.policy").write_text("S1: Judge the substance.\n", encoding="utf-8")
    (folder / "q.rubric").write_text(textwrap.dedent(rubric), encoding="utf-8")
    return folder


def test_held_out_exemplars_are_parsed_and_never_rendered(work: Path) -> None:
    seen = compile_battery(load_battery(write_battery(work, SEEN, "a")))
    held = compile_battery(load_battery(write_battery(work, HELD, "b")))
    # The SYSTEM prompt is byte for byte the one without the held-out exemplars.
    assert held.questions["stages"].system == seen.questions["stages"].system
    assert "reversed" not in held.questions["stages"].system
    exemplars = held.questions["stages"].exemplars
    assert [(ex.kind, ex.holdout, ex.expected) for ex in exemplars] == [
        ("correct", False, "pass"),
        ("incorrect", False, "fail"),
        ("incorrect", True, "fail"),
        ("partial", True, "pass"),
    ]


def test_holdout_in_the_wrong_place_is_an_error_at_its_column(work: Path) -> None:
    bad = SEEN.replace('why "all four"', 'holdout why "all four"')
    with pytest.raises(SpecErrors) as caught:
        load_battery(write_battery(work, bad))
    message = str(caught.value)
    assert "q.rubric:5:54: expected 'why' in field 'exemplar', found 'holdout'" in message
    assert 'hint: write it as: exemplar KIND "answer" why "reason" [expect pass|fail] [holdout]' in message


def test_calibrate_scores_the_held_out_exemplars_and_shows_both(work: Path, capsys) -> None:
    assert main(["calibrate", str(write_battery(work, HELD)), "--json"]) == 0
    captured = capsys.readouterr()
    obj = json.loads(captured.out)
    assert obj["scored_on"] == "held_out"
    assert (obj["n"], obj["agree"]) == (obj["held_out"]["n"], obj["held_out"]["agree"]) == (2, 1)
    assert (obj["seen"]["n"], obj["seen"]["agree"], obj["seen"]["agreement"]) == (2, 2, 1.0)
    assert sum(sum(row.values()) for row in obj["confusion"].values()) == 2  # the held-out two only
    assert [(m["index"], m["holdout"]) for m in obj["misses"]] == [(3, True)]
    assert "no held-out exemplars" not in captured.err

    assert main(["calibrate", str(work / "cal")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("calibrate cal: 4 exemplar(s) (2 held out) graded by ")
    assert "agreement 50.0% (1/2)" in out
    assert "  held out: agreement 50.0% (1/2)" in out and "  seen: agreement 100.0% (2/2)" in out
    assert "expected fail, got pass [t2] (held out)" in out


async def test_calibrate_says_what_to_do_when_a_battery_holds_nothing_out(
    work: Path, judge_server, capsys
) -> None:
    # A new battery holds no exemplar out: its report ends with the next step, never a warning.
    battery = write_battery(work, SEEN)
    server = await judge_server([json.dumps({"verdict": "pass", "reason": "all four"})] * 2)
    argv = ["calibrate", str(battery), "--judge", server.url, "--model", "m", "--no-cache"]
    assert await asyncio.to_thread(main, [*argv, "--json"]) == 0
    captured = capsys.readouterr()
    obj = json.loads(captured.out)
    assert obj["scored_on"] == "seen" and obj["held_out"] is None and obj["seen"]["n"] == 2
    assert captured.err == ""
    assert await asyncio.to_thread(main, argv) == 0
    captured = capsys.readouterr()
    assert captured.out.endswith(
        "\nnext: the judge's prompt showed it every exemplar it was measured on; end one or more exemplar "
        "lines with `holdout` to measure it on answers it has not seen (docs/language.md, section 4.4)\n"
    )
    assert "warning" not in captured.err
    # The builtin judge never reads the exemplars in its prompt: nothing to hold out for it.
    assert await asyncio.to_thread(main, ["calibrate", str(battery)]) == 0
    captured = capsys.readouterr()
    assert "holdout" not in captured.out + captured.err


def test_calibrate_labels_measures_a_judge_against_earlier_human_verdicts(work: Path, capsys) -> None:
    from support.make_results import make_record, write_results

    from tabench_dsl.review.decisions import make_decision
    from tabench_dsl.store.decisions import append_decision

    battery = write_battery(work, SEEN)
    sha = compile_battery(load_battery(battery)).questions["stages"].sha256
    reversed_order = "Compact, Recall, Index, Ingest, in that order."
    records = [
        make_record("a", "stages", "pass", answer=reversed_order, prompt_sha256=sha),
        make_record("b", "stages", "adjudicate", answer="Ingest, Index, Recall, Compact.", prompt_sha256=sha),
        make_record("c", "stages", "pass", answer="Ingest, Summarize.", prompt_sha256=sha),
        make_record("d", "stages", "fail", answer="Ingest.", prompt_sha256=sha),  # nobody looked at it
        make_record("e", "gone", "pass", answer="x"),  # a question the battery no longer has
    ]
    results = write_results(work / "run.jsonl", records)
    decisions = work / "run.decisions.jsonl"
    append_decision(decisions, make_decision(records[0], "fail", reviewer="ana", note="reversed", audit=True))
    append_decision(decisions, make_decision(records[1], "pass", reviewer="bo"))
    append_decision(decisions, make_decision(records[2], "fail", reviewer="ana", audit=True))
    append_decision(decisions, make_decision(records[4], "pass", reviewer="ana", audit=True))

    assert main(["calibrate", str(battery), "--labels", str(results), "--json"]) == 0
    captured = capsys.readouterr()
    obj = json.loads(captured.out)
    assert obj["scored_on"] == "labels" and (obj["n"], obj["agree"]) == (3, 2)
    assert obj["confusion"]["fail"] == {"pass": 1, "fail": 1, "adjudicate": 0, "error": 0}
    [miss] = obj["misses"]
    assert (miss["answer"], miss["expected"], miss["got"], miss["why"]) == (
        reversed_order,
        "fail",
        "pass",
        "audit by ana: reversed",
    )
    assert "1 labelled answer(s) to questions the battery lacks (left out)" in captured.err
    assert "no held-out exemplars" not in captured.err

    assert main(["calibrate", str(battery), "--labels", str(results)]) == 0
    assert capsys.readouterr().out.startswith(
        "calibrate cal: 3 answer(s) people decided or audited graded by "
    )
    empty = write_results(work / "none.jsonl", records[3:4])
    assert main(["calibrate", str(battery), "--labels", str(empty)]) == 2
    assert f"{empty}: no answer a person decided or audited (--labels needs some)" in capsys.readouterr().err

"""Totals: counted by the tool from standing records, checked against numbers worked out by hand."""

from __future__ import annotations

import json

import msgspec
import pytest

from tabench_dsl.cli import main
from tabench_dsl.core.records import Attempt, Decision, JudgeInfo, Record, Tokens
from tabench_dsl.core.stats import wilson_interval
from tabench_dsl.review.outcomes import latest
from tabench_dsl.review.totals import compute_totals, totals_json

JUDGE = JudgeInfo(backend="openai", model="m")


def rec(system, question, verdict, *, tier="t2", attempts=(), facets=None, decision=None, cause=None):
    return Record(
        system=system,
        question=question,
        tier=tier,
        verdict=verdict,
        reason="r",
        prompt_sha256="h",
        judge=JUDGE,
        attempts=list(attempts),
        facets=facets or {},
        decision=decision,
        cause=cause,
    )


def first(tokens=(0, 0), cache_hit=False, kind="first"):
    return Attempt(kind=kind, raw="{}", tokens=Tokens(*tokens), cache_hit=cache_hit)


def test_last_record_of_a_pair_stands():
    records = [rec("a", "q1", "error", cause="transport"), rec("a", "q2", "fail"), rec("a", "q1", "pass")]
    standing = latest(records)
    assert [r.verdict for r in standing.values()] == ["fail", "pass"]
    totals = compute_totals(records)
    assert totals.records == 2
    (a,) = totals.systems
    assert (a.answers, a.passed, a.fail, a.error) == (2, 1, 1, 0)


def test_counts_score_and_calls_by_hand():
    records = [
        rec("a", "q1", "pass", tier="t1"),
        rec("a", "q2", "pass", attempts=[first((100, 10))]),
        rec("a", "q3", "fail", attempts=[first((100, 12)), first((120, 8), kind="stern")]),
        rec(
            "a",
            "q4",
            "adjudicate",
            attempts=[first((1, 1)), first((1, 1), kind="stern")],
            cause="contradiction",
        ),
        rec(
            "a",
            "q5",
            "error",
            attempts=[Attempt(kind="first", raw=None, error="HTTP 503")],
            cause="transport",
        ),
        rec("b", "q1", "fail", attempts=[first(cache_hit=True)], facets={"missing_minor": True}),
    ]
    totals = compute_totals(records)
    a, b = totals.systems
    # a: 2 pass, 1 fail, 1 adjudicate, 1 error -> score 2 / 4; the error is not counted.
    assert (a.answers, a.passed, a.fail, a.adjudicate, a.error) == (5, 2, 1, 1, 1)
    assert a.score == pytest.approx(0.5)
    assert a.t1_passes == 1
    assert a.judge_calls == 6  # 1 + 2 + 2 + 1 failed call; T1 makes none
    assert a.stern_retries == 2
    assert a.tokens.total == 110 + 112 + 128 + 4
    assert (b.judge_calls, b.cache_hits, b.score) == (0, 1, 0.0)
    q1 = totals.questions[0]
    assert (q1.question, q1.answers, q1.passed, q1.fail, q1.score) == ("q1", 2, 1, 1, 0.5)
    assert totals.facets == {"missing_minor": 1}


def test_human_decision_counts_as_its_verdict():
    decision = Decision(
        system="a",
        question="q1",
        verdict="pass",
        prompt_sha256="h",
        reviewer="ann",
        time="2026-11-29T00:00:00Z",
    )
    totals = compute_totals([rec("a", "q1", "adjudicate", decision=decision), rec("a", "q2", "adjudicate")])
    (a,) = totals.systems
    assert (a.passed, a.adjudicate, a.human_pass, a.human_fail) == (1, 1, 1, 0)
    assert a.score == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [  # reference values of the Wilson score interval, z = 1.96
        (8, 10, 0.4902, 0.9433),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_wilson_interval_reference_values(successes, n, low, high):
    got_low, got_high = wilson_interval(successes, n)
    assert got_low == pytest.approx(low, abs=1e-4)
    assert got_high == pytest.approx(high, abs=1e-4)


def test_json_names_pass_as_pass():
    doc = json.loads(totals_json(compute_totals([rec("a", "q1", "pass", tier="t1")])))
    assert doc["systems"][0]["pass"] == 1
    assert "passed" not in doc["systems"][0]


def test_totals_command_reads_a_results_file(tmp_path, capsys):
    path = tmp_path / "results.jsonl"
    lines = [rec("a", "q1", "fail"), rec("a", "q1", "pass"), rec("b", "q1", "adjudicate")]
    path.write_bytes(b"".join(msgspec.json.encode(r) + b"\n" for r in lines))
    assert main(["totals", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(s["system"], s["pass"], s["adjudicate"]) for s in doc["systems"]] == [("a", 1, 0), ("b", 0, 1)]
    assert main(["totals", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Totals per system" in out and "judge: openai:m" in out


def test_totals_command_missing_file_is_a_usage_error(tmp_path, capsys):
    assert main(["totals", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such results file" in capsys.readouterr().err


def test_totals_command_names_lines_it_cannot_read_and_exits_1(tmp_path, capsys):
    path = tmp_path / "results.jsonl"
    good = msgspec.json.encode(rec("a", "q1", "pass")) + b"\n"
    path.write_bytes(good + b"garbage\n" + good.replace(b'"q1"', b'"q2"'))
    assert main(["totals", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    assert f"{path}:2: not a result record" in captured.err
    assert json.loads(captured.out)["systems"][0]["answers"] == 2


def test_a_record_taken_back_and_added_decided_counts_as_a_fresh_count_of_it_decided():
    """`StandingCounter.subtract` takes back every count `add` made: each adjudicated record of a
    file (tags, facets, tokens, served models, a price) taken back and added with a person's
    decision gives the totals a fresh count of the file with that decision gives, byte for byte."""
    from support.make_results import many_results

    from tabench_dsl.core.price import Price
    from tabench_dsl.review.totals import StandingCounter

    price = Price(input=0.4, output=1.6)
    tagged = (["hard"], ["hard", "memory"], [])
    records = [
        msgspec.structs.replace(record, tags=tagged[i % 3])
        for i, record in enumerate(latest(many_results(400, systems=4, seed=3)).values())
    ]
    counter = StandingCounter(price)
    for record in records:
        counter.add(record)
    waiting = [i for i, r in enumerate(records) if r.verdict == "adjudicate"]
    assert len(waiting) > 5 and any(records[i].tags for i in waiting)
    for n, i in enumerate(waiting[:8]):
        verdict = "pass" if n % 2 else "fail"
        record = records[i]
        decision = Decision(record.system, record.question, verdict, record.prompt_sha256, "ana", "now")
        decided = msgspec.structs.replace(record, decision=decision)
        counter.subtract(record)
        counter.add(decided)
        records[i] = decided
        fresh = compute_totals(records, price=price)
        assert totals_json(counter.totals(lambda: iter(records))) == totals_json(fresh)


def test_records_sharing_attempts_lists_count_as_records_with_lists_of_their_own():
    """The light reader shares one attempts list between records of the same shape, and the count
    notes each such record as one more use of its list (`call_counts.SharedCalls`): three judges
    at three prices, served models, cache hits, retries, panels and more shared lists than are
    held at once, in a scattered order, give byte for byte the totals of the same records each
    with a list of its own (a list per record, counted as it comes), with the reader's price or
    without. The figures are checked by hand for one system as well."""
    import random

    from tabench_dsl.core.price import Price
    from tabench_dsl.core.records import PanelVote, Served
    from tabench_dsl.review.call_counts import SHARED_KEPT

    judges = [
        JudgeInfo("openai", "m", price=Price(input=0.4, output=1.6)),
        JudgeInfo("anthropic", "c", price=Price(input=3.0, output=15.0, cached_input=0.3)),
        JudgeInfo("openai", "n", price=Price(input=0.07, output=0.3)),
    ]
    rng = random.Random(5)
    shapes = [
        [
            Attempt("first", "{}", tokens=Tokens(800 + n, 40 + n % 7, n % 5), served=Served(f"s{n % 3}")),
            *([Attempt(kind="stern", raw="{}", tokens=Tokens(900, 50))] if n % 4 == 0 else []),
            *([Attempt(kind="first", raw="{}", cache_hit=True)] if n % 5 == 1 else []),
        ]
        for n in range(SHARED_KEPT + 40)
    ]
    shared = []
    for i in range(SHARED_KEPT + 4000):
        judge = judges[rng.randrange(3)]
        record = msgspec.structs.replace(rec(f"s{i % 7}", f"q{i}", "pass"), judge=judge)
        record.attempts = shapes[rng.randrange(8) if i < 2000 else rng.randrange(len(shapes))]
        if i % 97 == 5:
            record.panel = [PanelVote(judges[(i + 1) % 3], "pass", "", attempts=shapes[i % 9])]
        shared.append(record)
    own = [msgspec.structs.replace(record, attempts=list(record.attempts)) for record in shared]
    for price in (None, Price(input=1.0, output=2.0)):
        counted = compute_totals(shared, price=price)
        assert totals_json(counted) == totals_json(compute_totals(own, price=price))
    row = next(s for s in compute_totals(shared).systems if s.system == "s3")
    mine = [record for record in shared if record.system == "s3"]
    every = [(r.judge, a) for r in mine for a in r.attempts] + [
        (v.judge, a) for r in mine for v in r.votes for a in v.attempts
    ]
    assert row.judge_calls == sum(not a.cache_hit for _, a in every)
    assert row.cache_hits == sum(a.cache_hit for _, a in every)
    assert row.stern_retries == sum(a.kind == "stern" for _, a in every)
    assert row.tokens.prompt == sum(a.tokens.prompt for _, a in every if not a.cache_hit)

"""Judge panels against real scripted judge servers that disagree: each judge's own format re-ask and
stern retry, the majority and unanimous rules, concurrency, per-judge cache entries, the record's
votes, and the panel's totals (each judge's pass rate, Fleiss' kappa)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path

import aiohttp
import msgspec
import pytest
from support.helpers_grading import (
    CONTRADICTION,
    FAIL,
    MALFORMED,
    PASS,
    compiled_battery,
    fast_policy,
    verdict,
)
from support.judge_server import Fault

from tabench_dsl.core.compiled import CompiledBattery
from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.records import Answer, JudgeInfo, PanelVote, Record, record_decoder, record_encoder
from tabench_dsl.grading.cache import ReplyCache
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.panel import Panel, Rule, decide
from tabench_dsl.grading.runner import Grader, RunStats
from tabench_dsl.grading.transport import ExchangeGate
from tabench_dsl.review.totals import compute_totals
from tabench_dsl.store.light_records import iter_light_records
from tabench_dsl.store.results import ResultsWriter, iter_records

AZURE = [Answer("a", "h03", "azure")]


async def grade_panel(
    battery: CompiledBattery,
    urls: Sequence[str],
    answers: Iterable[Answer],
    out: Path,
    *,
    rule: Rule = "majority",
    cache: ReplyCache | None = None,
    timeout: float = 5.0,
) -> tuple[list[Record], RunStats]:
    """Grade `answers` with a panel of Chat Completions judges, one per URL, all for model judge-m."""
    async with aiohttp.ClientSession() as session:
        members = [make_judge(url, model="judge-m", session=session, env={}, timeout=timeout) for url in urls]
        with ResultsWriter(out) as writer:
            grader = Grader(
                battery,
                Panel(members, rule),
                writer=writer,
                cache=cache,
                policy=fast_policy(timeout=timeout),
                limiter=ExchangeGate(8),
                env={},
            )
            stats = await grader.run(answers)
    return list(iter_records(out)), stats


async def test_majority_of_three_with_each_judges_own_reask_and_stern_retry(
    tmp_path: Path, judge_server
) -> None:
    battery = compiled_battery(tmp_path)
    plain = await judge_server([PASS])
    reasks = await judge_server([MALFORMED, PASS])  # its own format re-ask, then pass
    stern = await judge_server([CONTRADICTION, FAIL])  # its own stern retry, then a consistent fail
    urls = [plain.url, reasks.url, stern.url]
    (record,), stats = await grade_panel(battery, urls, AZURE, tmp_path / "r.jsonl")
    assert (record.verdict, record.cause, record.tier) == ("pass", None, "t2")
    assert record.judge.backend == "panel" and record.attempts == []
    assert [v.judge.endpoint for v in record.votes] == urls
    assert [v.verdict for v in record.votes] == ["pass", "pass", "fail"]
    assert [[a.kind for a in v.attempts] for v in record.votes] == [
        ["first"],
        ["first", "format"],
        ["first", "stern"],
    ]
    assert record.votes[2].reason == "omits the Compact stage"
    assert record.reason == "names all four stages"  # the first agreeing judge's
    assert record.facets == {"missing_minor": False}
    assert (plain.calls, reasks.calls, stern.calls) == (1, 2, 2)
    assert stern.requests[1]["messages"][1]["content"].startswith("STERN RETRY")
    assert (stats.passed, stats.calls) == (1, 5)


async def test_a_tie_is_adjudicated_as_a_panel_split(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    yes, no = await judge_server([PASS]), await judge_server([FAIL])
    (record,), stats = await grade_panel(battery, [yes.url, no.url], AZURE, tmp_path / "r.jsonl")
    assert (record.verdict, record.cause) == ("adjudicate", "panel_split")
    assert record.reason.startswith("the panel split (majority): ")
    assert f"{yes.url.split('//')[1].split('/')[0]}:judge-m: pass" in record.reason
    assert record.facets == {} and stats.adjudicate == 1


async def test_a_judge_that_cannot_decide_is_left_out_of_the_majority(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    a, b, broken = await judge_server([FAIL]), await judge_server([FAIL]), await judge_server([MALFORMED])
    (record,), _ = await grade_panel(battery, [a.url, b.url, broken.url], AZURE, tmp_path / "r.jsonl")
    assert record.verdict == "fail"
    assert [(v.verdict, v.cause) for v in record.votes] == [
        ("fail", None),
        ("fail", None),
        ("adjudicate", "malformed"),
    ]


async def test_unanimous_needs_every_judge(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    a, b, c = await judge_server([PASS]), await judge_server([PASS]), await judge_server([FAIL])
    (split,), _ = await grade_panel(
        battery, [a.url, b.url, c.url], AZURE, tmp_path / "s.jsonl", rule="unanimous"
    )
    assert (split.verdict, split.cause) == ("adjudicate", "panel_split")
    assert split.reason.startswith("the panel split (unanimous): ")
    (agreed,), _ = await grade_panel(battery, [a.url, b.url], AZURE, tmp_path / "u.jsonl", rule="unanimous")
    assert agreed.verdict == "pass"


async def test_every_judge_out_of_reach_is_an_error_resume_grades_again(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    a, b = await judge_server([Fault.ERROR_500]), await judge_server([Fault.ERROR_503])
    (record,), stats = await grade_panel(battery, [a.url, b.url], AZURE, tmp_path / "r.jsonl")
    assert (record.verdict, record.cause) == ("error", "transport")
    assert stats.errors == 1


async def test_the_judges_are_asked_at_once(tmp_path: Path, judge_server) -> None:
    """Each server holds its reply until the other has its request: asked one after the other, the
    first would wait for a request that never comes, and time out."""
    both = asyncio.Event()
    arrived: set[str] = set()

    def hold(name: str):
        async def reply(body: dict) -> str:
            arrived.add(name)
            if len(arrived) == 2:
                both.set()
            await asyncio.wait_for(both.wait(), 3.0)
            return PASS if name == "a" else FAIL

        return reply

    battery = compiled_battery(tmp_path)
    a, b = await judge_server(hold("a")), await judge_server(hold("b"))
    (record,), _ = await grade_panel(battery, [a.url, b.url], AZURE, tmp_path / "r.jsonl")
    assert [v.verdict for v in record.votes] == ["pass", "fail"]


async def test_each_judge_has_its_own_cache_entries(tmp_path: Path, judge_server) -> None:
    """Two servers for one model name, disagreeing: a cache keyed without the judge would serve the
    first one's reply for the second on the rerun, and the verdicts would change."""
    battery = compiled_battery(tmp_path)
    yes, no, third = await judge_server([PASS]), await judge_server([FAIL]), await judge_server([FAIL])
    urls = [yes.url, no.url, third.url]
    with ReplyCache(tmp_path / "cache.sqlite") as cache:
        (first,), _ = await grade_panel(battery, urls, AZURE, tmp_path / "1.jsonl", cache=cache)
    with ReplyCache(tmp_path / "cache.sqlite") as cache:
        (again,), stats = await grade_panel(battery, urls, AZURE, tmp_path / "2.jsonl", cache=cache)
        assert cache.hits == 3
    assert (yes.calls, no.calls, third.calls) == (1, 1, 1)
    assert [v.verdict for v in again.votes] == [v.verdict for v in first.votes] == ["pass", "fail", "fail"]
    assert all(a.cache_hit for v in again.votes for a in v.attempts)
    assert (stats.calls, stats.cache_hits) == (0, 3)


async def test_a_fatal_refusal_from_one_judge_stops_the_run(tmp_path: Path, judge_server) -> None:
    from tabench_dsl.core.errors import JudgeError

    battery = compiled_battery(tmp_path)
    ok, refused = await judge_server([PASS]), await judge_server([Fault.UNAUTHORIZED])
    with pytest.raises(JudgeError):
        await grade_panel(battery, [ok.url, refused.url], AZURE, tmp_path / "r.jsonl")


async def test_a_panel_may_not_hold_one_judge_twice(judge_server) -> None:
    server = await judge_server([PASS])
    async with aiohttp.ClientSession() as session:
        judges = [make_judge(server.url, model="judge-m", session=session, env={}) for _ in range(2)]
        with pytest.raises(UsageError, match="twice"):
            Panel(judges)
        with pytest.raises(UsageError, match="at least two"):
            Panel(judges[:1])


def vote(
    judge: str, outcome: str, *, facets: dict[str, bool] | None = None, cause: str | None = None
) -> PanelVote:
    reason = f"{judge} says {outcome}"
    return PanelVote(JudgeInfo("x", judge), outcome, reason, cause=cause, facets=facets or {})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("causes", "expected"),
    [
        (["rate_limit", "rate_limit"], "rate_limit"),
        (["transport", "transport"], "transport"),
        (["rate_limit", "transport"], "transport"),
        ([None, None], "transport"),
    ],
)
def test_a_panel_of_errors_takes_the_cause_its_votes_share(causes: list[str | None], expected: str) -> None:
    votes = [vote(f"j{i}", "error", cause=cause) for i, cause in enumerate(causes)]
    assert (decide(votes, "majority").verdict, decide(votes, "majority").cause) == ("error", expected)


@pytest.mark.parametrize(
    ("outcomes", "rule", "expected"),
    [
        (["pass", "pass", "fail"], "majority", "pass"),
        (["fail", "pass", "fail"], "majority", "fail"),
        (["pass", "fail"], "majority", "adjudicate"),
        (["pass", "fail", "adjudicate"], "majority", "adjudicate"),
        (["pass", "error"], "majority", "pass"),
        (["adjudicate", "error"], "majority", "adjudicate"),
        (["error", "error"], "majority", "error"),
        (["pass", "pass", "pass"], "unanimous", "pass"),
        (["pass", "pass", "fail"], "unanimous", "adjudicate"),
        (["pass", "pass", "error"], "unanimous", "adjudicate"),
        (["fail", "fail"], "unanimous", "fail"),
    ],
)
def test_decide_by_rule(outcomes: list[str], rule: Rule, expected: str) -> None:
    votes = [vote(f"j{i}", outcome) for i, outcome in enumerate(outcomes)]
    assert decide(votes, rule).verdict == expected


def test_a_facet_counts_when_most_agreeing_judges_saw_it() -> None:
    votes = [
        vote("a", "fail", facets={"hedged": True, "missing_minor": True}),
        vote("b", "fail", facets={"hedged": True, "missing_minor": False}),
        vote("c", "fail", facets={"hedged": False}),
        vote("d", "pass", facets={"hedged": True, "missing_minor": True}),
    ]
    decided = decide(votes, "majority")
    assert decided.verdict == "fail" and decided.reason == "a says fail"
    assert decided.facets == {"hedged": True, "missing_minor": False}  # 2 of 3 and 1 of 3 agreeing judges


def test_a_single_judge_record_is_written_as_before() -> None:
    record = Record("a", "q", "t2", "pass", "ok", "0" * 64, JudgeInfo("openai", "m"))
    line = record_encoder.encode(record)
    assert b'"panel"' not in line and b'"audit"' not in line
    assert record_decoder.decode(line).votes == [] and record_decoder.decode(line).audited is None
    # A line written before panels existed reads as a record without votes.
    old = b'{"system":"a","question":"q","tier":"t2","verdict":"fail","reason":"r","prompt_sha256":"x",'
    old += b'"judge":{"backend":"openai","model":"m"}}'
    assert record_decoder.decode(old).votes == []


async def test_panel_totals_show_each_judge_and_fleiss_kappa(tmp_path: Path, judge_server) -> None:
    """Three judges, four answers, scripted per answer. Votes (a, b, c):
    ans1 pass pass pass; ans2 pass pass fail; ans3 fail fail fail; ans4 pass fail <malformed twice>.
    Fleiss over ans1-3 (ans4 has an adjudicate vote), categories (pass, fail): rows (3,0) (2,1) (0,3);
    P_i = 1, 1/3, 1 -> P = 7/9; p = (5/9, 4/9) -> Pe = 41/81; kappa = (63 - 41) / 81 / (40/81) = 0.55.
    """
    script = {
        "a": {"one": PASS, "two": PASS, "three": FAIL, "four": PASS},
        "b": {"one": PASS, "two": PASS, "three": FAIL, "four": FAIL},
        "c": {"one": PASS, "two": FAIL, "three": FAIL, "four": MALFORMED},
    }

    def judge(name: str):
        def reply(body: dict) -> str:
            return script[name][body["messages"][1]["content"].rsplit("\n", 1)[1]]

        return reply

    battery = compiled_battery(tmp_path)
    servers = [await judge_server(judge(name)) for name in "abc"]
    answers = [Answer(f"s{i}", "h03", text) for i, text in enumerate(("one", "two", "three", "four"))]
    out = tmp_path / "r.jsonl"
    records, _ = await grade_panel(battery, [s.url for s in servers], answers, out)
    assert [r.verdict for r in sorted(records, key=lambda r: r.system)] == [
        "pass",
        "pass",
        "fail",
        "adjudicate",
    ]
    for source in (iter_records(out), iter_light_records(out)):
        totals = compute_totals(source)
        panel = totals.panel
        assert panel is not None
        assert (panel.answers, panel.split, panel.rated) == (4, 1, 3)
        assert panel.kappa == pytest.approx(0.55)
        rates = [(r.votes, r.passed, r.fail, r.adjudicate, r.pass_rate) for r in panel.judges]
        assert rates == [(4, 3, 1, 0, 0.75), (4, 2, 2, 0, 0.5), (4, 1, 2, 1, 0.25)]
        # 12 first asks and c's format re-ask on ans4
        assert sum(row.judge_calls for row in totals.systems) == 13
    document = msgspec.json.decode(msgspec.json.encode(compute_totals(iter_records(out))))
    assert document["panel"]["kappa"] == pytest.approx(0.55)


async def test_a_panel_judge_with_a_fail_shaped_pass_warns_under_its_name(
    tmp_path: Path, judge_server
) -> None:
    battery = compiled_battery(tmp_path)
    shaped = verdict("pass", "The answer is wrong about the order")
    a, b = await judge_server([shaped]), await judge_server([PASS])
    (record,), _ = await grade_panel(battery, [a.url, b.url], AZURE, tmp_path / "r.jsonl")
    assert record.verdict == "pass"
    assert record.votes[0].warnings == ["pass verdict with a fail-shaped reason"]
    assert record.warnings == [f"{record.votes[0].judge.describe()}: pass verdict with a fail-shaped reason"]


async def test_the_python_api_grades_with_a_panel_and_an_audit(tmp_path: Path, judge_server) -> None:
    from support.helpers_grading import write_battery

    from tabench_dsl import api
    from tabench_dsl.grading.session import GradingOptions

    yes, no, also_no = await judge_server([PASS]), await judge_server([FAIL]), await judge_server([FAIL])
    answers = [Answer("a", "h03", "azure"), Answer("a", "h02", "7311")]
    records = await api.agrade(
        write_battery(tmp_path),
        answers,
        GradingOptions(panel=(yes.url, no.url, also_no.url), model="m", t1_audit=1.0),
        env={},
    )
    by = {r.question: r for r in records}
    assert by["h03"].verdict == "fail" and len(by["h03"].votes) == 3
    audit = by["h02"].audited
    assert by["h02"].tier == "t1" and audit is not None and audit.verdict == "fail" and len(audit.panel) == 3
    unanimous = await api.agrade(
        write_battery(tmp_path),
        answers[:1],
        GradingOptions(panel=(yes.url, no.url), model="m", panel_rule="unanimous"),
        env={},
    )
    assert unanimous[0].cause == "panel_split"

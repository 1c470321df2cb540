"""The grading loop against a real scripted judge server: T1, format re-ask, stern retry,
adjudicate, warnings, transport exhaustion, the cache and resume."""

from __future__ import annotations

from pathlib import Path

from support.helpers_grading import (
    CONTRADICTION,
    FAIL,
    FAIL_SHAPED_PASS,
    MALFORMED,
    PASS,
    compiled_battery,
    fast_policy,
    grade,
    user_content,
)
from support.judge_server import Fault

from tabench_dsl.core.records import Answer
from tabench_dsl.core.tiers import t1_reason
from tabench_dsl.grading.cache import ReplyCache
from tabench_dsl.grading.judge_step import FAIL_SHAPED_PASS as FAIL_SHAPED_WARNING
from tabench_dsl.grading.plan import GradingPlan, PlanOptions
from tabench_dsl.store.standing_verdicts import done_pairs

STERN_OPENING = (
    "STERN RETRY: your previous judgment contradicted itself (fail verdict with a pass-shaped reason). "
    "Re-judge carefully; verdict must match reason.\n\n-- CANDIDATE ANSWER --\n"
)


async def test_t1_pass_makes_no_call(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([FAIL])
    answers = [
        Answer("a", "h01", "ingest, INDEX, recall and compact."),  # the accepted variant, not the gold
        Answer("a", "h02", "It listens on 7311."),
        Answer("b", "h02", "It listens on 7312."),
    ]
    records, stats = await grade(battery, server.url, answers, tmp_path / "r.jsonl")
    by = {r.key: r for r in records}
    assert by[("a", "h01")].tier == "t1" and by[("a", "h01")].verdict == "pass"  # the accepted variant
    assert by[("a", "h02")].tier == "t1" and by[("a", "h02")].reason == t1_reason("v2")
    assert by[("a", "h02")].t1_rule == "v2"  # the battery names no rule: the default
    assert by[("a", "h02")].attempts == []
    assert by[("b", "h02")].tier == "t2" and by[("b", "h02")].verdict == "fail"
    assert server.calls == 1 and user_content(server.requests[0]).endswith("It listens on 7312.")
    assert (stats.t1, stats.calls) == (2, 1)


async def test_t1_off_per_question_and_per_battery(tmp_path: Path, judge_server) -> None:
    server = await judge_server([PASS])
    answers = [Answer("a", "h03", "blue"), Answer("a", "h02", "7311")]
    records, _ = await grade(compiled_battery(tmp_path), server.url, answers, tmp_path / "r.jsonl")
    assert {r.question: r.tier for r in records} == {"h03": "t2", "h02": "t1"}
    off = tmp_path / "off"
    records, _ = await grade(compiled_battery(off, t1=False), server.url, answers, off / "r.jsonl")
    assert {r.tier for r in records} == {"t2"} and server.calls == 3


async def test_request_carries_the_exact_prompts(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([PASS])
    await grade(battery, server.url, [Answer("a", "h03", "Blue, {{ x }}")], tmp_path / "r.jsonl")
    (request,) = server.requests
    assert request["messages"] == [
        {"role": "system", "content": battery.questions["h03"].system},
        {"role": "user", "content": "-- CANDIDATE ANSWER --\nBlue, {{ x }}"},
    ]
    assert request["model"] == "judge-m" and request["temperature"] == 0 and request["max_tokens"] == 300


async def test_malformed_reply_is_asked_again_then_adjudicated(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([MALFORMED, "```json\n{not json}\n```"])
    (record,), stats = await grade(battery, server.url, [Answer("a", "h03", "azure")], tmp_path / "r.jsonl")
    assert record.verdict == "adjudicate" and record.cause == "malformed"
    assert [a.kind for a in record.attempts] == ["first", "format"]
    assert record.attempts[0].raw == MALFORMED
    assert record.reason.startswith("malformed reply twice: ")
    # The re-ask sends the very same messages.
    assert server.requests[0]["messages"] == server.requests[1]["messages"]
    assert record.attempts[0].request_sha256 == record.attempts[1].request_sha256
    assert stats.adjudicate == 1 and stats.calls == 2


async def test_malformed_then_good_reply_is_final(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([MALFORMED, "Sure. " + PASS])
    (record,), _ = await grade(battery, server.url, [Answer("a", "h03", "azure")], tmp_path / "r.jsonl")
    assert record.verdict == "pass" and record.cause is None
    assert [a.kind for a in record.attempts] == ["first", "format"]
    assert record.tolerated == ["surrounding_prose"]
    assert record.facets == {"missing_minor": False}


async def test_contradiction_gets_exactly_one_stern_retry(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)

    def responder(body: dict) -> str:
        return FAIL if user_content(body).startswith("STERN RETRY") else CONTRADICTION

    server = await judge_server(responder)
    (record,), _ = await grade(battery, server.url, [Answer("a", "h03", "azure")], tmp_path / "r.jsonl")
    assert record.verdict == "fail" and record.reason == "omits the Compact stage" and record.cause is None
    assert [a.kind for a in record.attempts] == ["first", "stern"]
    assert server.calls == 2
    stern = server.requests[1]["messages"]
    assert stern[0] == server.requests[0]["messages"][0]  # the same SYSTEM
    assert stern[1] == {"role": "user", "content": STERN_OPENING + "azure"}


async def test_contradiction_again_is_adjudicated(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([CONTRADICTION])
    (record,), _ = await grade(battery, server.url, [Answer("a", "h03", "azure")], tmp_path / "r.jsonl")
    assert record.verdict == "adjudicate" and record.cause == "contradiction"
    assert [a.kind for a in record.attempts] == ["first", "stern"] and server.calls == 2


async def test_malformed_stern_reply_is_adjudicated_as_contradiction(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([CONTRADICTION, MALFORMED])
    (record,), _ = await grade(battery, server.url, [Answer("a", "h03", "azure")], tmp_path / "r.jsonl")
    assert record.verdict == "adjudicate" and record.cause == "contradiction" and server.calls == 2


async def test_format_reask_then_contradiction_then_stern(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([MALFORMED, CONTRADICTION, PASS])
    (record,), _ = await grade(battery, server.url, [Answer("a", "h03", "azure")], tmp_path / "r.jsonl")
    assert [a.kind for a in record.attempts] == ["first", "format", "stern"]
    assert record.verdict == "pass" and server.calls == 3


async def test_pass_with_fail_shaped_reason_is_a_warning_not_a_retry(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([FAIL_SHAPED_PASS])
    (record,), _ = await grade(battery, server.url, [Answer("a", "h03", "azure")], tmp_path / "r.jsonl")
    assert record.verdict == "pass" and record.warnings == [FAIL_SHAPED_WARNING]
    assert server.calls == 1 and len(record.attempts) == 1


async def test_transport_exhaustion_is_an_error(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([Fault.ERROR_503])
    records, stats = await grade(
        battery, server.url, [Answer("a", "h03", "azure")], tmp_path / "r.jsonl", policy=fast_policy(3)
    )
    (record,) = records
    assert record.verdict == "error" and record.cause == "transport"
    assert server.calls == 3
    (attempt,) = record.attempts
    assert attempt.raw is None and attempt.transport_retries == 2 and "503" in (attempt.error or "")
    assert "gave up after 3 attempts" in record.reason
    assert stats.errors == 1


async def test_transport_faults_then_reply_counts_retries(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([Fault.RATE_LIMIT, Fault.RESET, Fault.TRUNCATED, PASS])
    (record,), _ = await grade(
        battery, server.url, [Answer("a", "h03", "azure")], tmp_path / "r.jsonl", policy=fast_policy(6)
    )
    assert record.verdict == "pass"
    (attempt,) = record.attempts
    assert attempt.transport_retries == 3 and attempt.kind == "first"


async def test_second_run_is_served_from_the_cache_errors_are_graded_again(
    tmp_path: Path, judge_server
) -> None:
    battery = compiled_battery(tmp_path, t1=False)
    failing = {"dead"}

    def responder(body: dict) -> str | Fault:
        text = user_content(body)
        if any(word in text for word in failing):
            return Fault.ERROR_500
        return MALFORMED if "junk" in text else PASS

    server = await judge_server(responder)
    answers = [Answer("a", "h01", "ingest"), Answer("a", "h02", "junk"), Answer("a", "h03", "dead")]
    cache_path = tmp_path / "cache.sqlite"
    with ReplyCache(cache_path) as cache:
        first, _ = await grade(battery, server.url, answers, tmp_path / "r1.jsonl", cache=cache)
    calls = server.calls
    assert {r.question: r.verdict for r in first} == {"h01": "pass", "h02": "adjudicate", "h03": "error"}
    failing.clear()  # the judge is reachable again
    with ReplyCache(cache_path) as cache:
        second, stats = await grade(battery, server.url, answers, tmp_path / "r2.jsonl", cache=cache)
    by = {r.question: r for r in second}
    # Served from the cache: same verdicts, including the malformed replies (reproducible) ...
    assert by["h01"].verdict == "pass" and by["h01"].attempts[0].cache_hit
    assert by["h02"].verdict == "adjudicate" and [a.cache_hit for a in by["h02"].attempts] == [True, True]
    # ... and only the answer that ended in error called the judge again.
    assert by["h03"].verdict == "pass" and not by["h03"].attempts[0].cache_hit
    assert server.calls == calls + 1
    assert (stats.cache_hits, stats.calls) == (3, 1)


async def test_resume_skips_done_pairs_and_regrades_errors(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path, t1=False)
    broken = [True]

    def responder(body: dict) -> str | Fault:
        return Fault.ERROR_500 if broken[0] and "dead" in user_content(body) else FAIL

    server = await judge_server(responder)
    out = tmp_path / "r.jsonl"
    answers = [Answer("a", "h01", "ingest"), Answer("a", "h03", "dead"), Answer("b", "h03", "blue?")]
    await grade(battery, server.url, answers, out)
    assert done_pairs(out) == {("a", "h01"), ("b", "h03")}
    broken[0] = False
    before = server.calls
    plan = GradingPlan(battery, out, PlanOptions(resume=True))  # what `grade --resume` grades
    records, stats = await grade(battery, server.url, plan.answers(answers), out)
    assert server.calls == before + 1 and plan.skipped == 2 and stats.graded == 1
    assert [(r.system, r.question, r.verdict) for r in records][-1] == ("a", "h03", "fail")
    assert len(records) == 4
    assert done_pairs(out) == {("a", "h01"), ("a", "h03"), ("b", "h03")}


async def test_records_carry_what_the_spec_asks(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server(["  " + PASS + "\n"])
    (record,), _ = await grade(battery, server.url, [Answer("a", "h03", "azure")], tmp_path / "r.jsonl")
    assert record.prompt_sha256 == battery.questions["h03"].sha256
    assert record.judge.model == "judge-m" and record.judge.language_model
    assert record.battery == "demo" and record.answer == "azure" and record.time.endswith("+00:00")
    assert record.tolerated == ["whitespace"]
    (attempt,) = record.attempts
    assert attempt.tokens.prompt > 0 and attempt.tokens.completion > 0 and attempt.latency_ms > 0
    assert not record.injection_suspect


async def test_rerun_replays_a_reask_from_its_own_cache_entry(tmp_path: Path, judge_server) -> None:
    battery = compiled_battery(tmp_path)
    server = await judge_server([MALFORMED, PASS, FAIL])
    answer = [Answer("a", "h03", "azure")]
    with ReplyCache(tmp_path / "cache.sqlite") as cache:
        (first,), _ = await grade(battery, server.url, answer, tmp_path / "r1.jsonl", cache=cache)
    with ReplyCache(tmp_path / "cache.sqlite") as cache:
        (again,), _ = await grade(battery, server.url, answer, tmp_path / "r2.jsonl", cache=cache)
    # The format re-ask sent the same messages as the first ask, yet its reply has its own entry:
    # the rerun replays malformed-then-pass, not malformed twice.
    assert first.verdict == again.verdict == "pass" and server.calls == 2
    assert [(a.kind, a.raw, a.cache_hit) for a in again.attempts] == [
        ("first", MALFORMED, True),
        ("format", PASS, True),
    ]


async def test_recorded_errors_carry_no_key_nor_anything_key_shaped(tmp_path: Path) -> None:
    from tabench_dsl.grading.judges.replay import ReplayJudge
    from tabench_dsl.grading.runner import Grader
    from tabench_dsl.store.results import ResultsWriter, iter_records

    secret = "zq-live-secret-value-42"
    folder = tmp_path / secret
    folder.mkdir()
    recorded = folder / "sk-proj-abcdef123456.jsonl"  # the judge's error names this path
    recorded.write_bytes(b"")
    out = tmp_path / "r.jsonl"
    with ResultsWriter(out) as writer:
        grader = Grader(
            compiled_battery(tmp_path),
            ReplayJudge(recorded),
            writer=writer,
            policy=fast_policy(),
            env={"OPENAI_API_KEY": secret},
        )
        await grader.run([Answer("a", "h03", "azure")])
    (record,) = iter_records(out)
    assert record.verdict == "error" and record.reason == record.attempts[0].error
    assert record.reason.startswith("replay: no recorded reply for this prompt in ")
    assert secret not in record.reason and "abcdef123456" not in record.reason
    assert record.reason.count("[redacted]") == 2


async def test_open_grader_opens_judge_and_cache_and_commits_on_exit(tmp_path: Path, judge_server) -> None:
    from tabench_dsl.grading.session import GradingOptions, open_grader

    server = await judge_server([PASS])
    battery = compiled_battery(tmp_path)
    path = tmp_path / "c.sqlite"
    options = GradingOptions(judge=server.url, model="m", retries=0, concurrency=2, cache=str(path))
    notices: list[str] = []
    async with open_grader(battery, options, on_notice=notices.append, env={}) as grader:
        assert grader.judge.info.endpoint == server.url and grader.limiter.max_concurrency == 2
        record = await grader.grade(Answer("a", "h03", "azure"))
        assert record.verdict == "pass" and not record.attempts[0].cache_hit
        assert grader.cache is not None
    assert notices == [] and grader.cache._closed  # closed, its entries committed
    with ReplyCache(path) as cache:
        assert cache._db.execute("SELECT count(*) FROM replies").fetchone() == (1,)
    # The builtin judge: no notice, and no cache file.
    builtin = GradingOptions(judge="builtin", model="gpt-x", cache=str(tmp_path / "none.sqlite"))
    async with open_grader(battery, builtin, on_notice=notices.append, env={}) as grader:
        assert grader.judge.info.deterministic and grader.cache is None
    assert notices == []
    assert not (tmp_path / "none.sqlite").exists()

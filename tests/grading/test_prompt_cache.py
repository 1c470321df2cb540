"""Provider prompt caching: the hint on the wire (OpenAI `prompt_cache_key`, Anthropic's SYSTEM as a
`cache_control` block), the manifest switch that turns it off, the cached-token counts in records
and the reply cache, and the order answers go in (grouped by question, a question's first answer
alone until its reply is back), in one process and with `--workers`.

Everything runs against the scripted server (tests/support/judge_server.py), which checks both wire formats
and, with `prefix_cache=N`, plays a provider's prompt cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from collections.abc import Iterable, Mapping
from pathlib import Path

import aiohttp
import msgspec
import pytest
from support.helpers_grading import PASS, fast_policy, write_battery
from support.interrupted_grading import finish, start_grade, workers_in
from support.judge_server import Raw

from tabench_dsl.cli import main
from tabench_dsl.core.compiled import CompiledBattery
from tabench_dsl.core.records import Answer, Attempt, JudgeInfo, Record, Tokens
from tabench_dsl.grading.cache import ReplyCache
from tabench_dsl.grading.dispatch import OPENING, READY, WARM_SECONDS, QuestionOrder
from tabench_dsl.grading.judges.anthropic import AnthropicJudge
from tabench_dsl.grading.judges.base import JudgeParams, Message
from tabench_dsl.grading.judges.factory import make_judge
from tabench_dsl.grading.judges.openai import OpenAIJudge, prompt_cache_key
from tabench_dsl.grading.runner import Grader
from tabench_dsl.grading.transport import ExchangeGate
from tabench_dsl.language.battery import load_battery
from tabench_dsl.language.render import compile_battery
from tabench_dsl.store.results import ResultsWriter, iter_records

PARAMS = JudgeParams(model="judge-m", temperature=0.0, max_tokens=64)
SYSTEM = "You grade answers. Gold: four stages."  # 6 words
OTHER_SYSTEM = "You grade answers. Gold: port 7311."
EPHEMERAL_BLOCK = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]


def messages(system: str = SYSTEM, answer: str = "Ingest") -> list[Message]:
    return [Message("system", system), Message("user", f"-- CANDIDATE ANSWER --\n{answer}")]  # 5 words


def openai_judge(server, session, **kw) -> OpenAIJudge:
    return OpenAIJudge(PARAMS, session=session, base_url=server.url, timeout=2.0, **kw)


def anthropic_judge(server, session, **kw) -> AnthropicJudge:
    return AnthropicJudge(
        PARAMS, session=session, api_key="k", base_url=server.anthropic_url, timeout=2.0, **kw
    )


def sent(request: dict) -> dict:
    return {k: v for k, v in request.items() if not k.startswith("_")}


# -- the hint on the wire ------------------------------------------------------------------------


async def test_openai_sends_one_prompt_cache_key_per_system(judge_server, http_session) -> None:
    server = await judge_server([PASS])
    judge = openai_judge(server, http_session)
    for system, answer in [(SYSTEM, "a"), (SYSTEM, "b"), (OTHER_SYSTEM, "a")]:
        await judge.complete(messages(system, answer))
    keys = [r["prompt_cache_key"] for r in server.requests]
    assert keys[0] == keys[1] != keys[2]
    assert keys[0] == prompt_cache_key(SYSTEM) and re.fullmatch(r"tabench-[0-9a-f]{40}", keys[0])
    assert all(len(k) <= 64 for k in keys)  # the API refuses longer keys (the server checks too)
    # The hint is the only change: the messages are sent exactly as before.
    assert server.requests[0]["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "-- CANDIDATE ANSWER --\na"},
    ]


async def test_openai_without_prompt_cache_sends_no_key(judge_server, http_session) -> None:
    server = await judge_server([PASS])
    await openai_judge(server, http_session, prompt_cache=False).complete(messages())
    assert "prompt_cache_key" not in server.requests[0]


async def test_anthropic_sends_the_system_as_a_cache_control_block(judge_server, http_session) -> None:
    server = await judge_server([PASS])
    await anthropic_judge(server, http_session).complete(messages())
    await anthropic_judge(server, http_session, prompt_cache=False).complete(messages())
    marked, plain = (sent(r) for r in server.requests)
    assert marked["system"] == EPHEMERAL_BLOCK
    assert plain["system"] == SYSTEM
    assert {k: v for k, v in marked.items() if k != "system"} == {
        k: v for k, v in plain.items() if k != "system"
    }


async def test_a_server_refusing_the_key_is_asked_again_without_it(judge_server, http_session) -> None:
    refusal = Raw(
        status=400,
        body={
            "error": {
                "message": "Unrecognized request argument supplied: prompt_cache_key",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
    )
    server = await judge_server(lambda body: refusal if "prompt_cache_key" in body else PASS)
    judge = openai_judge(server, http_session)
    assert (await judge.complete(messages())).content == PASS
    assert (await judge.complete(messages())).content == PASS
    assert ["prompt_cache_key" in r for r in server.requests] == [True, False, False]


async def test_a_server_refusing_cache_control_is_asked_again_with_a_string(
    judge_server, http_session
) -> None:
    refusal = Raw(
        status=400,
        body={
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "cache_control: unknown"},
        },
    )
    server = await judge_server(lambda body: refusal if isinstance(body.get("system"), list) else PASS)
    judge = anthropic_judge(server, http_session)
    assert (await judge.complete(messages())).content == PASS
    assert (await judge.complete(messages())).content == PASS
    assert [type(r["system"]).__name__ for r in server.requests] == ["list", "str", "str"]


# -- the counts ----------------------------------------------------------------------------------


async def test_openai_cached_tokens_are_read(judge_server, http_session) -> None:
    server = await judge_server([PASS], prefix_cache=16)
    judge = openai_judge(server, http_session)
    first = await judge.complete(messages(answer="a"))
    second = await judge.complete(messages(answer="b"))
    # The prompt is 6 + 5 words; the SYSTEM's 6 are cached the second time, and counted in the
    # prompt both times (OpenAI's prompt_tokens includes them).
    assert first.tokens == Tokens(prompt=11, completion=10)
    assert second.tokens == Tokens(prompt=11, completion=10, cached_prompt=6)


async def test_anthropic_cache_reads_and_writes_count_in_the_prompt(judge_server, http_session) -> None:
    server = await judge_server([PASS], prefix_cache=16)
    judge = anthropic_judge(server, http_session)
    first = await judge.complete(messages(answer="a"))
    second = await judge.complete(messages(answer="b"))
    # The server reports input_tokens 5 (the SYSTEM's 6 apart, as Anthropic does): the prompt is 11.
    assert first.tokens == Tokens(prompt=11, completion=10, cache_write=6)
    assert second.tokens == Tokens(prompt=11, completion=10, cached_prompt=6)


async def test_usage_with_null_or_missing_cache_fields_counts_zero(judge_server, http_session) -> None:
    chat = {
        "choices": [{"message": {"role": "assistant", "content": PASS}}],
        "usage": {"prompt_tokens": 1500, "completion_tokens": 9, "prompt_tokens_details": None},
    }
    message = {
        "content": [{"type": "text", "text": PASS}],
        "usage": {
            "input_tokens": 12,
            "output_tokens": 9,
            "cache_read_input_tokens": None,
            "cache_creation_input_tokens": 1490,
        },
    }
    server = await judge_server(lambda body: Raw(body=message if "system" in body else chat))
    assert (await openai_judge(server, http_session).complete(messages())).tokens == Tokens(1500, 9)
    assert (await anthropic_judge(server, http_session).complete(messages())).tokens == Tokens(
        1502, 9, cached_prompt=0, cache_write=1490
    )


# -- grading: records, the reply cache, the switch -----------------------------------------------


def battery_with(root: Path, judge_yaml: str | None = None) -> CompiledBattery:
    folder = write_battery(root)
    if judge_yaml is not None:
        manifest = folder / "battery.yaml"
        manifest.write_text(manifest.read_text(encoding="utf-8") + judge_yaml + "\n", encoding="utf-8")
    return compile_battery(load_battery(folder))


async def grade_with(
    battery: CompiledBattery,
    spec: str,
    answers: Iterable[Answer],
    out: Path,
    *,
    env: Mapping[str, str] | None = None,
    cache: ReplyCache | None = None,
    concurrency: int = 4,
) -> list[Record]:
    env = dict(env or {})
    async with aiohttp.ClientSession() as session:
        judge = make_judge(
            spec, model="judge-m", manifest_judge=battery.judge, session=session, env=env, timeout=5.0
        )
        with ResultsWriter(out) as writer:
            grader = Grader(
                battery,
                judge,
                writer=writer,
                cache=cache,
                policy=fast_policy(),
                limiter=ExchangeGate(concurrency),
                env=env,
            )
            await grader.run(answers)
    return list(iter_records(out))


def sky_answers(systems: int) -> list[Answer]:
    return [Answer(f"s{i}", "h03", f"answer from s{i}") for i in range(1, systems + 1)]


async def test_cached_counts_land_in_the_records_and_survive_the_reply_cache(
    tmp_path: Path, judge_server
) -> None:
    battery = battery_with(tmp_path)
    system_words = len(battery.questions["h03"].system.split())
    server = await judge_server([PASS], prefix_cache=16)
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        records = await grade_with(battery, server.url, sky_answers(3), tmp_path / "r1.jsonl", cache=cache)
    by = {r.system: r.attempts[0].tokens for r in records}
    assert by["s1"].cached_prompt == 0  # the question's first answer: nothing cached yet
    assert by["s2"].cached_prompt == by["s3"].cached_prompt == system_words  # the rest waited for it
    assert all(t.prompt > t.cached_prompt for t in by.values())
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        again = await grade_with(battery, server.url, sky_answers(3), tmp_path / "r2.jsonl", cache=cache)
    assert server.calls == 3
    assert all(a.cache_hit for r in again for a in r.attempts)
    assert {r.system: r.attempts[0].tokens for r in again} == by


async def test_anthropic_counts_land_in_the_records(tmp_path: Path, judge_server) -> None:
    battery = battery_with(tmp_path)
    system_words = len(battery.questions["h03"].system.split())
    server = await judge_server([PASS], prefix_cache=16)
    env = {"ANTHROPIC_BASE_URL": server.anthropic_url, "ANTHROPIC_API_KEY": "k"}
    records = await grade_with(battery, "anthropic", sky_answers(3), tmp_path / "r.jsonl", env=env)
    by = {r.system: r.attempts[0].tokens for r in records}
    assert (by["s1"].cache_write, by["s1"].cached_prompt) == (system_words, 0)
    assert (by["s2"].cache_write, by["s2"].cached_prompt) == (0, system_words)
    assert all(r["system"][0]["cache_control"] == {"type": "ephemeral"} for r in server.requests)


async def test_the_manifest_switch_turns_the_hint_off(tmp_path: Path, judge_server) -> None:
    on = battery_with(tmp_path / "on")
    off = battery_with(tmp_path / "off", "judge: {prompt_cache: false}")
    assert (on.judge.prompt_cache, off.judge.prompt_cache) == (None, False)
    # The switch changes nothing of the compiled prompts.
    assert {q.sha256 for q in on.questions.values()} == {q.sha256 for q in off.questions.values()}
    server = await judge_server([PASS])
    env = {"ANTHROPIC_BASE_URL": server.anthropic_url, "ANTHROPIC_API_KEY": "k"}
    await grade_with(off, server.url, sky_answers(2), tmp_path / "o1.jsonl")
    await grade_with(off, "anthropic", sky_answers(2), tmp_path / "o2.jsonl", env=env)
    assert len(server.requests) == 4
    assert not any("prompt_cache_key" in r for r in server.requests)
    assert [type(r["system"]).__name__ for r in server.requests if "system" in r] == ["str", "str"]
    await grade_with(on, server.url, sky_answers(1), tmp_path / "n1.jsonl")
    assert "prompt_cache_key" in server.requests[-1]


async def test_the_hint_changes_no_request_sha_nor_reply_cache_key(tmp_path: Path, judge_server) -> None:
    """A reply cached with the hint off is served with it on: the hint is not part of the key, and
    the recorded request sha256 is the same (replay files keep working)."""
    on, off = battery_with(tmp_path / "on"), battery_with(tmp_path / "off", "judge: {prompt_cache: false}")
    server = await judge_server([PASS])
    with ReplyCache(tmp_path / "c.sqlite") as cache:
        first = await grade_with(off, server.url, sky_answers(2), tmp_path / "a.jsonl", cache=cache)
        second = await grade_with(on, server.url, sky_answers(2), tmp_path / "b.jsonl", cache=cache)
    assert server.calls == 2 and all(a.cache_hit for r in second for a in r.attempts)
    shas = lambda records: {r.system: r.attempts[0].request_sha256 for r in records}  # noqa: E731
    assert shas(first) == shas(second)


# -- the order answers go in ---------------------------------------------------------------------


class HeldOpener:
    """A judge that holds the first ask of h03 (the sky) until every ask of h02 (the port) arrived
    (or 5 s passed: `starved`), logging each ask and reply as (event, system, question)."""

    def __init__(self, h02_answers: int) -> None:
        self.h02_answers = h02_answers
        self.log: list[tuple[str, str, str]] = []
        self.h02_asked = asyncio.Event()
        self.starved = False

    async def __call__(self, body: dict) -> str:
        question = "h02" if "daemon" in body["messages"][0]["content"] else "h03"
        found = re.search(r"answer from (s\d+)", body["messages"][1]["content"])
        assert found is not None
        system = found.group(1)
        first = not any(q == question for _, _, q in self.log)
        self.log.append(("ask", system, question))
        if sum(1 for e, _, q in self.log if (e, q) == ("ask", "h02")) == self.h02_answers:
            self.h02_asked.set()
        if first and question == "h03":
            try:
                await asyncio.wait_for(self.h02_asked.wait(), 5.0)
            except TimeoutError:
                self.starved = True
        self.log.append(("reply", system, question))
        return PASS

    def asks_while_first_out(self, question: str) -> list[str]:
        """The asks of `question` that arrived after its first ask and before its first reply."""
        events = [(e, s) for e, s, q in self.log if q == question]
        first_reply = events.index(("reply", events[0][1]))
        return [s for e, s in events[1:first_reply] if e == "ask"]


def system_by_system(systems: int) -> list[Answer]:
    """The answers of `systems` systems to h03 and h02, one system after the other (how answers
    files usually run)."""
    answers = []
    for i in range(1, systems + 1):
        answers += [Answer(f"s{i}", "h03", f"answer from s{i}"), Answer(f"s{i}", "h02", f"answer from s{i}")]
    return answers


async def test_a_questions_rest_waits_for_its_first_reply_while_others_go(
    tmp_path: Path, judge_server
) -> None:
    judge = HeldOpener(h02_answers=3)
    server = await judge_server(judge)
    records = await grade_with(battery_with(tmp_path), server.url, system_by_system(3), tmp_path / "r.jsonl")
    assert len(records) == 6 and {r.verdict for r in records} == {"pass"}
    # While h03's first answer was out, h02 opened, got its reply and sent the rest: the
    # concurrency stayed busy; no second h03 answer went before the first came back.
    assert not judge.starved
    assert judge.asks_while_first_out("h03") == []
    asks = [(s, q) for e, s, q in judge.log if e == "ask"]
    assert asks[:2] == [("s1", "h03"), ("s1", "h02")]
    assert {a for a in asks[2:4]} == {("s2", "h02"), ("s3", "h02")}
    assert server.calls == 6


async def test_in_file_order_without_prompt_cache(tmp_path: Path, judge_server) -> None:
    """The switch also gives back the answers file's order: the same answers now go two questions
    at a time, so h03's second answer goes while its first is out (what grouping prevents)."""
    judge = HeldOpener(h02_answers=3)
    server = await judge_server(judge)
    battery = battery_with(tmp_path, "judge: {prompt_cache: false}")
    await grade_with(battery, server.url, system_by_system(3), tmp_path / "r.jsonl")
    assert judge.asks_while_first_out("h03") != []


@pytest.mark.slow
async def test_workers_keep_the_order(tmp_path: Path, judge_server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABENCH_CACHE", raising=False)
    judge = HeldOpener(h02_answers=4)
    server = await judge_server(judge)
    battery = write_battery(tmp_path)
    answers = tmp_path / "answers.jsonl"
    answers.write_bytes(b"".join(msgspec.json.encode(a) + b"\n" for a in system_by_system(4)))
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--judge",
        server.url,
        "--model",
        "m",
        "--workers",
        "2",
        "--concurrency",
        "4",
        "--no-cache",
    ]
    assert await asyncio.to_thread(main, argv) == 0
    assert not judge.starved
    assert judge.asks_while_first_out("h03") == []
    assert len(list(iter_records(tmp_path / "results.jsonl"))) == 8


# -- QuestionOrder by itself ---------------------------------------------------------------------


def graded(answer: Answer, *, fresh: bool) -> Record:
    """The record of `answer`: with a reply the judge sent (`fresh`), or a T1 pass (none)."""
    attempts = [Attempt("first", PASS)] if fresh else []
    judge = JudgeInfo("openai", "m")
    return Record(answer.system, answer.question, "t2", "pass", "", "sha", judge, attempts=attempts)


def take_all(order: QuestionOrder) -> list[tuple[str, str]]:
    taken = []
    while (answer := order.take()) is not None:
        taken.append((answer.system, answer.question))
    return taken


def test_order_opens_each_question_then_sends_its_rest_once_warm() -> None:
    answers = [Answer(f"s{i}", q, "x") for i in (1, 2, 3) for q in ("q1", "q2")]
    order = QuestionOrder(answers)
    assert take_all(order) == [("s1", "q1"), ("s1", "q2")] and order.held
    order.finished(graded(answers[1], fresh=True))  # q2's reply is back first
    assert take_all(order) == [("s2", "q2"), ("s3", "q2")] and order.held
    order.finished(graded(answers[0], fresh=True))
    assert take_all(order) == [("s2", "q1"), ("s3", "q1")] and not order.held


def test_questions_open_until_the_answers_in_sight_reach_open_ahead_times_the_concurrency() -> None:
    # Three answers a question: each opener out promises two more. Concurrency 4: at 1.0 the
    # second opener's promise (4) holds the third question back; at 1.5 (threshold 6) it opens too,
    # so its opener fills a slot that would otherwise wait one round trip.
    answers = [Answer(f"s{i}", f"q{n}", "x") for i in (1, 2, 3) for n in (1, 2, 3, 4)]
    assert take_all(QuestionOrder(answers, concurrency=4)) == [("s1", "q1"), ("s1", "q2")]
    eager = QuestionOrder(answers, concurrency=4, open_ahead=1.5)
    assert take_all(eager) == [("s1", "q1"), ("s1", "q2"), ("s1", "q3")]


def test_an_opener_without_a_fresh_reply_lets_the_next_answer_open() -> None:
    answers = [Answer(f"s{i}", "q1", "x") for i in (1, 2, 3)]
    order = QuestionOrder(answers)
    assert take_all(order) == [("s1", "q1")]
    order.finished(graded(answers[0], fresh=False))  # a T1 pass or a reply-cache hit: still cold
    assert take_all(order) == [("s2", "q1")]
    order.finished(graded(answers[1], fresh=True))
    assert take_all(order) == [("s3", "q1")]


def test_a_question_cools_after_warm_seconds() -> None:
    now = [0.0]
    answers = [Answer(f"s{i}", "q1", "x") for i in (1, 2, 3, 4)]
    order = QuestionOrder(answers, clock=lambda: now[0])
    assert take_all(order) == [("s1", "q1")]
    order.finished(graded(answers[0], fresh=True))
    now[0] = WARM_SECONDS + 1  # no reply for q1 since: its prefix has left the provider's cache
    assert take_all(order) == [("s2", "q1")] and order.held  # opened again, alone
    order.finished(graded(answers[1], fresh=True))
    assert take_all(order) == [("s3", "q1"), ("s4", "q1")]


def test_the_window_bounds_what_is_read_ahead() -> None:
    read: list[int] = []

    def answers():
        for i in range(10):
            read.append(i)
            yield Answer(f"s{i}", f"q{i % 2}", "x" * 10)

    order = QuestionOrder(answers(), window_answers=4, window_chars=1000)
    assert take_all(order) == [("s0", "q0"), ("s1", "q1")]
    assert len(read) == 6  # two handed out, and the window topped up to four waiting
    order = QuestionOrder(answers(), window_answers=100, window_chars=25)
    read.clear()
    order.take()
    assert len(read) == 3  # stops once 25 characters are held


def test_no_more_questions_open_than_their_answers_can_follow() -> None:
    """Opening a question for every free slot would have the provider hold more prefixes than it
    keeps: a question opens only while the answers let go or waiting behind openers are fewer than
    the concurrency."""
    answers = [Answer(f"s{i}", f"q{q}", "x") for i in range(1, 4) for q in range(10)]
    order = QuestionOrder(answers, concurrency=4)
    # q0 promises 2 answers, q1 2 more: 4 fill the concurrency, so q2 waits.
    assert take_all(order) == [("s1", "q0"), ("s1", "q1")] and order.held
    order.finished(graded(answers[0], fresh=True))
    # Once one of q0's answers went, 3 are in sight: q2 opens before q0 runs dry, and fills it again.
    assert take_all(order) == [("s2", "q0"), ("s1", "q2"), ("s3", "q0")]
    # Many questions with one answer each promise nothing: they open as fast as slots free up.
    single = QuestionOrder([Answer("s1", f"q{q}", "x") for q in range(10)], concurrency=4)
    assert len(take_all(single)) == 10


def test_a_dropped_opener_lets_the_next_answer_open() -> None:
    answers = [Answer(f"s{i}", "q1", "x") for i in (1, 2, 3)]
    order = QuestionOrder(answers)
    assert take_all(order) == [("s1", "q1")] and order.held
    order.dropped(answers[0])  # its --workers process died with it
    assert take_all(order) == [("s2", "q1")]


def _pid_of_client(port: int, candidates: list[int]) -> int | None:
    """Which of the `candidates` processes holds the TCP socket whose local port is `port`."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(fields[9])
    for pid in candidates:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                if os.readlink(fd) in {f"socket:[{inode}]" for inode in inodes}:
                    return pid
            except OSError:
                continue
    return None


@pytest.mark.slow
async def test_a_worker_dying_with_an_opener_does_not_hold_its_question(tmp_path: Path, judge_server) -> None:
    """The worker holding a question's first answer dies: the parent lets the question's next answer
    open it (the others waited for that reply), so the grading ends instead of waiting for ever."""
    write_battery(tmp_path, t1=False)
    answers = [Answer(f"s{i}", "h03", f"answer from s{i}") for i in range(1, 7)]
    (tmp_path / "answers.jsonl").write_bytes(b"".join(msgspec.json.encode(a) + b"\n" for a in answers))
    first: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    release = asyncio.Event()

    async def judge(body: dict) -> str:
        if not first.done():
            first.set_result(int(server.requests[-1]["_peer_port"]))
            # The first answer's reply never comes: its worker is killed.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(release.wait(), 60)
        return PASS

    server = await judge_server(judge, peer_port=True)
    proc = await start_grade(tmp_path, server.url, "--workers", "2")
    ended = asyncio.ensure_future(proc.wait())
    done, _ = await asyncio.wait([first, ended], timeout=30, return_when=asyncio.FIRST_COMPLETED)
    assert first in done, (await finish(proc))[1].decode()
    port = first.result()
    pid = _pid_of_client(port, workers_in(tmp_path))
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    try:
        _, err = await finish(proc)
    finally:
        release.set()
    assert proc.returncode == 1, err.decode()
    assert b"ended unexpectedly" in err
    records = list(iter_records(tmp_path / "results.jsonl"))
    assert sorted(r.system for r in records) == ["s2", "s3", "s4", "s5", "s6"], err.decode()


@pytest.mark.parametrize("seed", range(12))
def test_order_invariants_under_random_replies(seed: int) -> None:
    """Random answers, window, concurrency and outcomes: every answer is handed out once; a question
    no reply warmed never has two answers out; nothing waits with nothing out (no deadlock); the count of
    answers in sight matches the queues."""
    import random

    rng = random.Random(seed)
    questions = [f"q{i}" for i in range(rng.randint(1, 12))]
    answers = [
        Answer(f"s{i}", rng.choice(questions), "x" * rng.randint(1, 5)) for i in range(rng.randint(1, 120))
    ]
    answers = list({(a.system, a.question): a for a in answers}.values())
    now = [0.0]
    order = QuestionOrder(
        answers,
        concurrency=rng.randint(1, 10),
        window_answers=rng.randint(1, 50),
        window_chars=rng.randint(5, 200),
        clock=lambda: now[0],
    )
    out: list[Answer] = []
    handed: list[tuple[str, str]] = []
    warm_until: dict[str, float] = {}
    while True:
        while len(out) < order._concurrency and (answer := order.take()) is not None:
            question = answer.question
            cold = warm_until.get(question, -1.0) <= now[0]
            assert not (cold and any(o.question == question for o in out)), (
                "two answers of a cold question out"
            )
            out.append(answer)
            handed.append((answer.system, answer.question))
        in_sight = sum(
            len(q) for name, q in order._queued.items() if order._state.get(name) in (OPENING, READY)
        )
        assert order._promised == in_sight
        if not out:
            assert not order.held, "answers wait with nothing out"
            break
        done = out.pop(rng.randrange(len(out)))
        fresh = rng.random() < 0.8
        now[0] += rng.choice([0.0, 1.0])  # no cooling here (see test_a_question_cools_...)
        if fresh:
            warm_until[done.question] = now[0] + WARM_SECONDS
        if rng.random() < 0.05:
            order.dropped(done)
        else:
            order.finished(graded(done, fresh=fresh))
    assert sorted(handed) == sorted((a.system, a.question) for a in answers)

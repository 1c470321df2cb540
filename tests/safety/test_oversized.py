"""Oversized input and output: an answer over `--max-answer-bytes` (default 256 KiB of UTF-8) is
never sent to the judge and ends `adjudicate` with cause `oversized`, which every output names; a
judge reply over 64 KiB is malformed (asked again, kept cut), and no reply body is read past a cap.

The judge is the scripted server on 127.0.0.1 (tests/support/judge_server.py); the CLI runs in-process
through `main(argv)`, in a worker thread while the server serves from the test's loop.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import io
import json
import sys
from pathlib import Path

import pytest
from support.helpers_grading import PASS, compiled_battery, grade, user_content, write_battery
from support.judge_server import Fault, Raw

from tabench_dsl.cli import main
from tabench_dsl.core.records import CAUSE_TEXTS, Answer
from tabench_dsl.grading.cache import ReplyCache
from tabench_dsl.grading.judges._http import MAX_BODY_BYTES
from tabench_dsl.grading.judges.anthropic import AnthropicJudge
from tabench_dsl.grading.judges.base import JudgeParams, Message
from tabench_dsl.grading.judges.openai import OpenAIJudge
from tabench_dsl.grading.route import MAX_ANSWER_BYTES
from tabench_dsl.grading.verdict import MAX_REPLY_BYTES, REPLY_CUT_MARK, cut_reply, decode_reply
from tabench_dsl.store.results import iter_records

OVERSIZED = CAUSE_TEXTS["oversized"]


def answers_file(root: Path, *answers: tuple[str, str, str]) -> Path:
    path = root / "answers.jsonl"
    lines = [json.dumps({"system": s, "question": q, "answer": a}) for s, q, a in answers]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def test_the_default_limit_is_256_kib() -> None:
    assert MAX_ANSWER_BYTES == 256 * 1024


async def test_an_answer_over_the_limit_is_not_sent_and_ends_adjudicate(
    work: Path, judge_server, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await judge_server([PASS])
    battery = write_battery(work)
    at_limit = "b" * 64
    answers = answers_file(
        work,
        ("a", "h03", at_limit),  # 64 bytes: sent
        ("b", "h03", "c" * 65),  # 65 bytes: not sent
        ("c", "h03", "é" * 40),  # 40 characters, 80 bytes of UTF-8: not sent
        ("d", "h02", "7311 " * 20),  # holds the gold, but T1 is not tried on an oversized answer
    )
    out = work / "results.jsonl"
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--out",
        str(out),
        "--no-cache",
        "--judge",
        server.url,
        "--model",
        "m",
        "--max-answer-bytes",
        "64",
    ]
    assert await run(argv) == 0  # adjudicate is an outcome, not an error
    assert [user_content(r).rsplit("\n", 1)[-1] for r in server.requests] == [at_limit]
    by_system = {r.system: r for r in iter_records(out)}
    assert by_system["a"].verdict == "pass"
    for system, size, answer in (("b", 65, "c" * 65), ("c", 80, "é" * 40), ("d", 100, "7311 " * 20)):
        record = by_system[system]
        outcome = (record.tier, record.verdict, record.cause, record.attempts)
        assert outcome == ("t2", "adjudicate", "oversized", [])
        whole = hashlib.sha256(answer.encode("utf-8")).hexdigest()
        assert record.reason == (
            f"the answer is {size} bytes of UTF-8, over the limit of 64 (--max-answer-bytes): it was not "
            f"sent to the judge; its first 64 bytes are kept here (sha256 of the whole: {whole})"
        )
        # Cut, never whole: the first 64 bytes, a character split at the cut dropped.
        assert record.answer == answer.encode("utf-8")[:64].decode("utf-8", "ignore")
    capsys.readouterr()

    # Every output that reads results knows the cause.
    assert main(["totals", str(out), "--json"]) == 0
    totals = json.loads(capsys.readouterr().out)
    counts = {row["system"]: (row["adjudicate"], row["pass"]) for row in totals["systems"]}
    assert counts == {"a": (0, 1), "b": (1, 0), "c": (1, 0), "d": (1, 0)}
    html = work / "report.html"
    assert main(["report", str(out), "--html", str(html)]) == 0
    assert f"oversized: {OVERSIZED}".replace("'", "&#x27;") in html.read_text(encoding="utf-8")
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", io.StringIO("q\n"))
        assert main(["adjudicate", str(out)]) == 0
    assert f"adjudicate (oversized): {OVERSIZED}\n" in capsys.readouterr().out


async def test_an_oversized_final_answer_after_its_reasoning_is_kept_cut_and_says_so(
    work: Path, judge_server, capsys: pytest.CaptureFixture[str]
) -> None:
    # The limit holds the final text (the reasoning cut first): 65 bytes of it are over 64. The
    # record keeps the answer as given and the final text each to 64 bytes, never whole.
    server = await judge_server([PASS])
    final = "c" * 65
    given = "<think>" + "r" * 100 + "</think>" + final
    answers = answers_file(work, ("a", "h03", given))
    out = work / "results.jsonl"
    argv = ["grade", str(write_battery(work)), "--answers", str(answers), "--out", str(out), "--no-cache"]
    assert await run([*argv, "--judge", server.url, "--model", "m", "--max-answer-bytes", "64"]) == 0
    assert server.requests == []
    [record] = list(iter_records(out))
    assert (record.verdict, record.cause) == ("adjudicate", "oversized")
    assert (
        record.answer == given[:64] and record.reasoning is not None and record.reasoning.final == final[:64]
    )
    whole = hashlib.sha256(final.encode("utf-8")).hexdigest()
    assert record.reason == (
        "the final answer (its reasoning cut) is 65 bytes of UTF-8, over the limit of 64 "
        "(--max-answer-bytes): it was not sent to the judge; the answer as given and its final text are "
        f"kept here to their first 64 bytes each (sha256 of the whole final answer: {whole})"
    )
    capsys.readouterr()


async def test_the_default_limit_applies_without_the_flag(
    work: Path, judge_server, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await judge_server([PASS])
    battery = write_battery(work)
    limit = MAX_ANSWER_BYTES
    answers = answers_file(work, ("a", "h03", "x" * limit), ("b", "h03", "x" * (limit + 1)))
    out = work / "results.jsonl"
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--out",
        str(out),
        "--no-cache",
        "--judge",
        server.url,
        "--model",
        "m",
    ]
    assert await run(argv) == 0
    assert server.calls == 1
    assert {r.system: r.cause for r in iter_records(out)} == {"a": None, "b": "oversized"}


def test_grading_workers_apply_the_limit(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    battery = write_battery(work)
    answers = answers_file(work, ("a", "h03", "blue"), ("b", "h03", "a much longer answer"))
    out = work / "results.jsonl"
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--out",
        str(out),
        "--workers",
        "2",
        "--max-answer-bytes",
        "8",
    ]
    assert main(argv) == 0
    assert {r.system: r.cause for r in iter_records(out)} == {"a": None, "b": "oversized"}


def test_calibrate_applies_the_limit_to_exemplars(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["new", "demo"]) == 0
    capsys.readouterr()
    assert main(["calibrate", "demo", "--json", "--max-answer-bytes", "1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n"] > 0
    assert sum(row["adjudicate"] for row in result["confusion"].values()) == result["n"]


@pytest.mark.parametrize("command", ["grade", "calibrate"])
def test_the_limit_must_be_positive(work: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    battery = write_battery(work)
    argv = [command, str(battery), "--max-answer-bytes", "0"]
    if command == "grade":
        argv += ["--answers", str(answers_file(work, ("a", "h03", "blue")))]
    assert main(argv) == 2
    assert capsys.readouterr().err == "tabench: error: --max-answer-bytes must be at least 1\n"


def test_the_viewer_page_names_the_cause_as_the_terminal_does() -> None:
    from tabench_dsl.review.viewer.page import viewer_page

    assert f'"oversized": {json.dumps(OVERSIZED)},' in viewer_page().html  # in the constants it is given


# -- oversized replies -------------------------------------------------------------------------------


def padded(reply: str, size: int) -> str:
    """`reply` with spaces after it up to `size` bytes of UTF-8."""
    return reply + " " * (size - len(reply.encode()))


def test_a_reply_over_64_kib_is_malformed_whatever_it_holds() -> None:
    assert MAX_REPLY_BYTES == 64 * 1024
    assert decode_reply(padded(PASS, MAX_REPLY_BYTES)).verdict is not None
    assert decode_reply(padded(PASS, MAX_REPLY_BYTES + 1)).problem == "reply over 65536 bytes"
    # Counted in bytes, not characters: prose of two-byte characters up to the limit is tolerated,
    # one character more is not.
    prose = PASS + " " * (2 - len(PASS.encode()) % 2)  # an even number of bytes
    within = prose + "é" * ((MAX_REPLY_BYTES - len(prose.encode())) // 2)
    assert len(within.encode()) == MAX_REPLY_BYTES and len(within) < MAX_REPLY_BYTES // 1.9
    assert decode_reply(within).verdict is not None
    assert decode_reply(within + "é").problem == "reply over 65536 bytes"


def test_a_long_reply_is_kept_cut_and_stays_malformed() -> None:
    reply = padded(PASS, 100_000)
    cut = cut_reply(reply)
    assert cut == reply[:MAX_REPLY_BYTES] + REPLY_CUT_MARK
    assert cut_reply(cut) == cut and decode_reply(cut).verdict is None
    assert cut_reply(PASS) is PASS
    # A character the limit falls inside is left out whole.
    cut = cut_reply("a" + "€" * 30_000)  # 1 + 3 bytes each: 65,536 falls inside character 21,845
    assert cut == "a" + "€" * 21_845 + REPLY_CUT_MARK


async def test_a_reply_over_64_kib_gets_the_format_re_ask_and_is_kept_cut(
    tmp_path: Path, judge_server
) -> None:
    long_reply = padded(PASS, MAX_REPLY_BYTES + 10)
    server = await judge_server([long_reply, PASS])
    battery = compiled_battery(tmp_path, t1=False)
    with ReplyCache(tmp_path / "cache.sqlite") as cache:
        (record,), _ = await grade(
            battery, server.url, [Answer("a", "h03", "blue")], tmp_path / "r.jsonl", cache=cache
        )
    assert record.verdict == "pass" and [a.kind for a in record.attempts] == ["first", "format"]
    first = record.attempts[0]
    assert first.raw == long_reply[:MAX_REPLY_BYTES] + REPLY_CUT_MARK
    # The cache holds the cut reply too: a rerun replays the same sequence without a call.
    with ReplyCache(tmp_path / "cache.sqlite") as cache:
        (again,), _ = await grade(
            battery, server.url, [Answer("a", "h03", "blue")], tmp_path / "r2.jsonl", cache=cache
        )
    assert server.calls == 2 and [a.raw for a in again.attempts] == [a.raw for a in record.attempts]


async def test_two_long_replies_end_adjudicate_malformed(tmp_path: Path, judge_server) -> None:
    server = await judge_server([padded(PASS, 70_000)])
    (record,), _ = await grade(
        compiled_battery(tmp_path, t1=False), server.url, [Answer("a", "h03", "blue")], tmp_path / "r.jsonl"
    )
    assert (record.verdict, record.cause) == ("adjudicate", "malformed")
    assert record.reason == "malformed reply twice: reply over 65536 bytes"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_an_endless_body_is_read_no_further_than_the_cap(judge_server, http_session, wire: str) -> None:
    server = await judge_server([Fault.ENDLESS])
    params = JudgeParams(model="m")
    if wire == "openai":
        judge = OpenAIJudge(params, session=http_session, base_url=server.url, timeout=10)
    else:
        judge = AnthropicJudge(
            params, session=http_session, api_key="k", base_url=server.anthropic_url, timeout=10
        )
    completion = await judge.complete([Message("system", "grade"), Message("user", "blue")])
    assert len(completion.content) == MAX_BODY_BYTES + 1  # the read stopped there, long before 10 s
    assert decode_reply(completion.content).problem == "reply over 65536 bytes"


async def test_a_compressed_body_is_capped_as_it_unpacks(judge_server, http_session) -> None:
    body = json.dumps({"choices": [{"message": {"content": "x" * (20 * MAX_BODY_BYTES)}}]}).encode()
    packed = gzip.compress(body)
    assert len(packed) < MAX_BODY_BYTES // 10
    server = await judge_server(
        [Raw(body=packed, headers={"content-type": "application/json", "content-encoding": "gzip"})]
    )
    judge = OpenAIJudge(JudgeParams(model="m"), session=http_session, base_url=server.url, timeout=10)
    completion = await judge.complete([Message("system", "grade"), Message("user", "blue")])
    assert len(completion.content) == MAX_BODY_BYTES + 1 and completion.content.startswith('{"choices"')

"""Keys go only where the user sent them, and are cut from everything tabench writes.

A key from the environment reaches a judge the user named (`--judge`, OPENAI_BASE_URL,
ANTHROPIC_BASE_URL) or the provider's own host, never a URL only a battery's manifest names; a key a
judge echoes back, in an error body or inside a successful reply, reaches neither the results file,
the reply cache nor the terminal. Every judge here is the scripted server on 127.0.0.1
(tests/support/judge_server.py); the CLI runs in-process through `main(argv)`, in a worker thread while the
server serves from the test's loop.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import PASS, compiled_battery, grade, verdict, write_battery
from support.judge_server import Raw

from tabench_dsl.cli import main
from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.nodes import JudgeDefaults
from tabench_dsl.core.records import Answer
from tabench_dsl.core.redact import REDACTED, scrub
from tabench_dsl.grading.cache import ReplyCache
from tabench_dsl.grading.judges.factory import choose_judge, make_judge, manifest_backend_problem
from tabench_dsl.store.results import iter_records

CANARY = "sk-canary-keys-5b1d9e7c3a2f4068"
#: A part of the canary no scrubbed text may hold either (a masked echo keeps the key's tail).
CANARY_TAIL = "5b1d9e7c3a2f4068"
ANTHROPIC_CANARY = "sk-ant-api03-canary-8e2f6a4c1d9b7350"


def battery_with_judge(root: Path, judge: str) -> Path:
    """The grading tests' battery, its manifest naming the judge `judge` (a YAML flow mapping)."""
    folder = write_battery(root, t1=False)
    manifest = folder / "battery.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8") + f"judge: {judge}\n", encoding="utf-8")
    return folder


def answers_file(root: Path, *answers: str) -> Path:
    path = root / "answers.jsonl"
    lines = [json.dumps({"system": f"s{i}", "question": "h03", "answer": a}) for i, a in enumerate(answers)]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


# -- a URL only the manifest names -----------------------------------------------------------------


@pytest.mark.parametrize("command", ["grade", "calibrate"])
async def test_a_judge_url_only_the_manifest_names_gets_nothing(
    work: Path,
    judge_server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    server = await judge_server([PASS])
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    battery = battery_with_judge(work, f'{{backend: "{server.url}", model: m}}')
    argv = [command, str(battery)]
    if command == "grade":
        argv += ["--answers", str(answers_file(work, "blue")), "--no-cache"]
    assert await run(argv) == 2
    out, err = capsys.readouterr()
    assert err == (
        f"tabench: error: battery.yaml names the judge URL {server.url} (judge.backend); tabench sends "
        f"keys and answers only to a judge you name yourself: to trust this one, pass --judge {server.url}\n"
    )
    assert out == "" and server.requests == []  # neither the key nor an answer went out
    assert not (work / "results.jsonl").exists()


async def test_the_same_url_passed_with_judge_is_trusted_and_gets_the_key(
    work: Path, judge_server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await judge_server([PASS], api_key=CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    battery = battery_with_judge(work, f'{{backend: "{server.url}", model: m}}')
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers_file(work, "blue")),
        "--no-cache",
        "--judge",
        server.url,
    ]
    assert await run(argv) == 0
    assert server.rejections == [] and server.requests[0]["_headers"]["authorization"] == "<redacted>"
    assert CANARY not in "".join(capsys.readouterr())


async def test_grading_workers_refuse_a_manifest_url_too(
    work: Path, judge_server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await judge_server([PASS])
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    battery = battery_with_judge(work, f'{{backend: "{server.url}", model: m}}')
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers_file(work, "blue")),
        "--no-cache",
        "--workers",
        "2",
    ]
    assert await run(argv) == 2
    assert f"pass --judge {server.url}" in capsys.readouterr().err
    assert server.requests == []


@pytest.mark.parametrize(
    ("backend", "expected"),
    [
        ("builtin", None),
        ("openai", None),
        ("openai:gpt-x", None),
        ("anthropic:claude-x", None),
        ("https://judge.example.org/v1", "pass --judge https://judge.example.org/v1"),
        ("HTTP://127.0.0.1:8000/v1", "pass --judge http://127.0.0.1:8000/v1"),
        # Credentials and a query in the manifest's URL are never repeated back.
        ("https://u:secret-pw@judge.example.org/v1?k=v", "pass --judge https://judge.example.org/v1"),
        ("replay:../../home/someone/results.jsonl", "pass --judge replay:FILE instead"),
    ],
)
def test_what_a_manifest_may_choose_on_its_own(backend: str, expected: str | None) -> None:
    problem = manifest_backend_problem(backend)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None and problem.endswith(expected) and "secret-pw" not in problem


def test_the_choice_says_where_it_came_from() -> None:
    env = {"OPENAI_API_KEY": CANARY}
    manifest = JudgeDefaults(model="m", backend="https://judge.example.org/v1")
    assert choose_judge("openai", manifest_judge=manifest, env=env).source == "flag"
    assert choose_judge(None, manifest_judge=manifest, env=env).source == "manifest"
    assert choose_judge(None, model="m", env=env).source == "environment"
    assert choose_judge(None, env=env).source == "default"
    with pytest.raises(UsageError, match=r"pass --judge https://judge\.example\.org/v1"):
        make_judge(None, manifest_judge=manifest, env=env, session=object())
    # The flag overrides the manifest: the user named the judge.
    assert (
        make_judge(
            "https://judge.example.org/v1", manifest_judge=manifest, env=env, session=object()
        ).info.endpoint
        == "https://judge.example.org/v1"
    )


async def test_a_manifest_may_choose_openai_which_goes_where_the_environment_says(
    work: Path, judge_server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = await judge_server([PASS], api_key=CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    battery = battery_with_judge(work, "{backend: openai, model: m}")
    argv = ["grade", str(battery), "--answers", str(answers_file(work, "blue")), "--no-cache"]
    assert await run(argv) == 0
    assert server.rejections == [] and len(server.requests) == 1
    assert CANARY not in "".join(capsys.readouterr())


def test_a_manifest_openai_without_a_base_url_goes_to_the_official_host() -> None:
    judge = make_judge(
        None,
        manifest_judge=JudgeDefaults(model="m", backend="openai"),
        env={"OPENAI_API_KEY": CANARY},
        session=object(),
    )
    assert judge.info.endpoint == "https://api.openai.com/v1"
    judge = make_judge(
        None,
        manifest_judge=JudgeDefaults(model="m", backend="anthropic"),
        env={"ANTHROPIC_API_KEY": CANARY},
        session=object(),
    )
    assert judge.info.endpoint == "https://api.anthropic.com"


# -- keys a judge echoes ---------------------------------------------------------------------------


def echoing_judge(key: str, *, anthropic: bool):
    """A responder that echoes `key` everywhere a judge's text can go, one answer each:
    `error` fails twice with the key in a 500 body, then passes with the key (and a masked copy) in
    its reason; `malformed` sends the key in a reply that is no verdict, then a verdict; `always`
    fails every time with the key in a 503 body (the record ends in `error`)."""
    masked = key[:7] + "****" + key[-4:]
    seen: dict[str, int] = {}

    def error_body(status: int) -> Raw:
        message = f"upstream refused key {key} ({masked})"
        body = (
            {"type": "error", "error": {"type": "api_error", "message": message}}
            if anthropic
            else {"error": {"message": message, "type": "server_error"}}
        )
        return Raw(status=status, body=body)

    def respond(body: dict) -> str | Raw:
        answer = body["messages"][-1]["content"].rsplit("\n", 1)[-1]
        seen[answer] = count = seen.get(answer, 0) + 1
        if answer == "always":
            return error_body(503)
        if answer == "error" and count <= 2:
            return error_body(500)
        if answer == "malformed" and count == 1:
            return f"I cannot grade this; my key is {key} and {masked}"
        return verdict("pass", f"blue, as the gold says; echoing {key} and {masked}", missing_minor=False)

    return respond


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_key_echoed_by_the_judge_is_written_nowhere(
    work: Path, judge_server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], wire: str
) -> None:
    key = ANTHROPIC_CANARY if wire == "anthropic" else CANARY
    server = await judge_server(echoing_judge(key, anthropic=wire == "anthropic"), api_key=key)
    if wire == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_url)
        judge = ["--judge", "anthropic:m"]
    else:
        monkeypatch.setenv("OPENAI_API_KEY", key)
        judge = ["--judge", server.url, "--model", "m"]
    battery = write_battery(work, t1=False)
    answers = answers_file(work, "error", "malformed", "always")
    out = work / "results.jsonl"
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--out",
        str(out),
        "--cache",
        str(work / "cache" / "replies.sqlite"),
        "--retries",
        "2",
        "--concurrency",
        "1",
        *judge,
    ]
    assert await run(argv) == 1  # the `always` answer ended in error
    assert server.rejections == [] and len(server.requests) == 3 + 2 + 3  # the key was accepted

    by_answer = {r.answer: r for r in iter_records(out)}
    assert by_answer["error"].verdict == by_answer["malformed"].verdict == "pass"
    assert by_answer["error"].reason == f"blue, as the gold says; echoing {REDACTED} and {REDACTED}"
    malformed = by_answer["malformed"].attempts[0].raw
    assert malformed == f"I cannot grade this; my key is {REDACTED} and {REDACTED}"
    assert by_answer["always"].verdict == "error" and REDACTED in by_answer["always"].reason

    stdout, stderr = capsys.readouterr()
    written = [out.read_bytes(), stdout.encode(), stderr.encode()]
    cache_files = sorted((work / "cache").iterdir())
    assert cache_files  # the replies were cached: their bytes are checked, journal files included
    written += [path.read_bytes() for path in cache_files]
    masked = key[:7] + "****" + key[-4:]
    for blob in written:
        assert key.encode() not in blob and masked.encode() not in blob and key[-12:].encode() not in blob


async def test_a_cached_reply_holding_a_key_is_scrubbed_when_served(tmp_path: Path, judge_server) -> None:
    """A cache written before replies were scrubbed (here: while the key was not in the
    environment) still holds the key: the reply is scrubbed as it comes out of the cache."""
    secret = "zq-live-secret-value-42"  # not key-shaped: only the environment makes it a secret
    server = await judge_server([verdict("pass", f"fine; the server saw {secret}")])
    battery = compiled_battery(tmp_path, t1=False)
    answers = [Answer("a", "h03", "blue")]
    with ReplyCache(tmp_path / "cache.sqlite") as cache:
        (first,), _ = await grade(battery, server.url, answers, tmp_path / "r1.jsonl", cache=cache)
    assert secret in first.reason  # nobody said it was a key
    with ReplyCache(tmp_path / "cache.sqlite") as cache:
        (again,), _ = await grade(
            battery, server.url, answers, tmp_path / "r2.jsonl", cache=cache, env={"OPENAI_API_KEY": secret}
        )
    assert again.attempts[0].cache_hit and server.calls == 1
    assert again.reason == f"fine; the server saw {REDACTED}"
    assert secret not in (tmp_path / "r2.jsonl").read_text()


# -- key-shaped words ------------------------------------------------------------------------------


def test_key_shaped_words_are_cut_but_ordinary_words_kept() -> None:
    text = (
        "sent sk-abc1****wxyz, sk-proj-Zx81kq0, key_9f8e7d6c5b and api-A1B2C3D4E5; "
        "the key_points, a key-value store, an api-compatible server and task-1234567 stay"
    )
    assert scrub(text) == (
        f"sent {REDACTED}, {REDACTED}, {REDACTED} and {REDACTED}; "
        "the key_points, a key-value store, an api-compatible server and task-1234567 stay"
    )

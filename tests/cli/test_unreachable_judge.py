"""A judge that cannot be reached at all stops `grade` early (exit 2, one message naming its URL
and what failed), the records written staying; a judge that answers, even with errors, does not;
and whenever errors stand, the terminal totals say beside the score how many answers it leaves out.

Through `main(argv)`: a closed port on 127.0.0.1 (connection refused), a host name that cannot
resolve (`.invalid`, RFC 2606), and the scripted judge server for a judge that is reached.
"""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from support.helpers_grading import PASS, write_battery
from support.judge_server import Fault

from tabench_dsl.cli import main
from tabench_dsl.store.results import iter_records


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


@pytest.fixture
def work(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COLUMNS", "200")
    return work


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def system_rows(out: str) -> dict[str, str]:
    """The rows of the terminal's per-system table, by system."""
    start = out.index("Totals per system")
    lines = out[start : out.index("└", start)].splitlines()  # to the table's bottom rule
    return {line.split("│")[1].strip(): line for line in lines if line.startswith("│")}


def answers(folder: Path, count: int) -> Path:
    # One T1 pass (h02) first, then `count` answers only the judge can grade (h03 has t1 off).
    rows = [{"system": "a", "question": "h02", "answer": "7311"}]
    rows += [{"system": f"s{i}", "question": "h03", "answer": "azure"} for i in range(count)]
    path = folder / "answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("base", "failure"),
    [
        (f"http://127.0.0.1:{closed_port()}/v1", "connection to the judge failed (ClientConnectorError)"),
        ("http://judge.invalid:8000/v1", "connection to the judge failed (ClientConnectorDNSError)"),
    ],
    ids=["refused", "dns"],
)
async def test_a_judge_never_reached_stops_the_run_early_exit_2(
    work: Path, capsys, base: str, failure: str
) -> None:
    battery = write_battery(work)
    path = answers(work, 40)
    argv = ["grade", str(battery), "--answers", str(path), "--judge", base + "?token=sk-canary-query-0123"]
    argv += ["--model", "m", "--retries", "0", "--concurrency", "2"]
    assert await run(argv) == 2
    out, err = capsys.readouterr()
    assert err.count("tabench: error:") == 1 and "Traceback" not in err
    assert f"the judge at {base} (" in err
    assert "could not be reached: each of its first 3 calls failed " in err
    assert failure in err and "the records written are kept" in err and "--judge" in err
    assert "sk-canary-query" not in out + err  # the URL is named without its query
    records = list(iter_records(work / "results.jsonl"))
    # The T1 pass is kept; no more than the first calls (two at a time) were made and recorded.
    assert ("a", "h02", "pass") in {(r.system, r.question, r.verdict) for r in records}
    errors = [r for r in records if r.verdict == "error"]
    assert 1 <= len(errors) <= 4 and len(records) < 41


async def test_a_judge_that_answers_with_errors_is_not_stopped_and_totals_say_what_is_left_out(
    work: Path, capsys, judge_server
) -> None:
    # The server is reached, and fails (HTTP 500) every call but the second: ordinary errors.
    server = await judge_server([Fault.ERROR_500, PASS, Fault.ERROR_500])
    battery = write_battery(work)
    path = answers(work, 3)
    with path.open("a", encoding="utf-8") as f:  # a's h03 is graded first (file order, one at a time)
        f.write(json.dumps({"system": "a", "question": "h03", "answer": "azure"}) + "\n")
    rows = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([rows[0], rows[-1], *rows[1:-1]]) + "\n", encoding="utf-8")
    argv = ["grade", str(battery), "--answers", str(path), "--judge", server.url, "--model", "m"]
    argv += ["--retries", "0", "--concurrency", "1", "--no-cache"]
    assert await run(argv) == 1
    out, err = capsys.readouterr()
    assert "could not be reached" not in err
    assert len(list(iter_records(work / "results.jsonl"))) == 5
    assert server.calls == 4
    # Beside each score, the errors it leaves out: a's 100% rests on its T1 pass alone.
    table = system_rows(out)
    assert "100.0% (1 left out)" in table["a"]
    assert "100.0%" in table["s0"] and "left out" not in table["s0"]
    assert "- (1 left out)" in table["s1"] and "- (1 left out)" in table["s2"]
    capsys.readouterr()
    assert main(["totals", "results.jsonl"]) == 0
    out = capsys.readouterr().out  # grade ends with the per-system table; totals shows the rest
    assert "100.0% (1 left out)" in out
    assert "25.0% (3 left out)" not in out and "100.0% (3 left out)" in out  # h03 across systems

"""Files and servers written by someone else, round 2: a batch ledger, Inspect logs, redirects,
batch replies, outputs over links, CSV cells and reply caches (a battery's own scorer is in
test_hostile_scorers.py).

Every server is a real aiohttp application on 127.0.0.1 (port 0); the CLI runs in-process through
`main(argv)`, in a worker thread while a server serves from the test's loop. Where memory is the
point, the command runs in a subprocess under RLIMIT_AS.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from support.helpers_grading import PASS as PASS_REPLY
from support.helpers_grading import write_battery
from support.limited_run import limited

from tabench_dsl.cli import main
from tabench_dsl.grading.batch import Ended, Submitted, ledger_path
from tabench_dsl.grading.batch.ledger import Ledger
from tabench_dsl.store.results import iter_records

OPENAI_CANARY = "sk-canary-hostile-0a1b2c3d4e5f60718293"
ANTHROPIC_CANARY = "sk-ant-api03-canary-hostile-9f8e7d6c5b4a"


@pytest.fixture
def work(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(work / "xdg-cache"))
    return work


class Recorder:
    """A server that answers every request with `reply` (status, body, headers) and keeps what it got."""

    def __init__(self, status: int = 200, body: object = None, headers: dict[str, str] | None = None) -> None:
        self.status, self.body, self.headers = status, body, headers or {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.server: TestServer | None = None

    async def _handle(self, request: web.Request) -> web.Response:
        await request.read()
        self.requests.append((request.method, request.path, dict(request.headers)))
        body = self.body if self.body is not None else {"id": "batch_x", "status": "in_progress"}
        return web.json_response(body, status=self.status, headers=self.headers)

    async def start(self) -> Recorder:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self.server = TestServer(app, host="127.0.0.1", port=0)
        await self.server.start_server()
        return self

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}"

    def keys_seen(self) -> list[str]:
        return [
            v
            for _, _, h in self.requests
            for k, v in h.items()
            if k.lower() in ("authorization", "x-api-key")
        ]


@pytest.fixture
async def recorder() -> AsyncIterator:
    started: list[Recorder] = []

    async def start(*args, **kwargs) -> Recorder:
        server = await Recorder(*args, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        assert server.server is not None
        await server.server.close()


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def write_ledger(results: Path, *, service: str, endpoint: str, batch_id: str = "batch_x") -> Path:
    entry = Submitted(
        id=batch_id, service=service, endpoint=endpoint, model="m", round=1, time="t", requests=[]
    )
    path = ledger_path(results)
    with Ledger(path) as ledger:
        ledger.append(entry)
    return path


# 1. The ledger never chooses where a key goes ------------------------------------------------


@pytest.mark.parametrize("service", ["anthropic", "openai"])
@pytest.mark.parametrize("cancel", [False, True])
async def test_a_ledger_naming_another_host_is_refused_and_sent_nothing(
    work: Path, recorder, monkeypatch, capsys, service: str, cancel: bool
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_CANARY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_CANARY)
    thief = await recorder()
    endpoint = thief.url + ("/v1" if service == "openai" else "")
    write_ledger(work / "results.jsonl", service=service, endpoint=endpoint)
    argv = ["batches", "results.jsonl", *(["--cancel"] if cancel else [])]
    assert await run(argv) == 2
    err = capsys.readouterr().err
    assert thief.requests == []
    own = "https://api.anthropic.com" if service == "anthropic" else "https://api.openai.com/v1"
    assert endpoint in err and own in err and "nothing was sent" in err
    assert OPENAI_CANARY not in err and ANTHROPIC_CANARY not in err


async def test_the_batches_command_asks_the_endpoint_the_user_names(
    work: Path, recorder, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_CANARY)
    mine = await recorder()
    write_ledger(work / "results.jsonl", service="openai", endpoint=mine.url + "/v1")
    assert await run(["batches", "results.jsonl", "--judge", mine.url]) == 0
    assert [p for _, p, _ in mine.requests] == ["/v1/batches/batch_x"]
    assert mine.keys_seen() == [f"Bearer {OPENAI_CANARY}"]
    # The environment names an endpoint the same way.
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_CANARY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", mine.url)
    mine.body = {"id": "batch_a", "processing_status": "in_progress"}
    write_ledger(work / "other.jsonl", service="anthropic", endpoint=mine.url, batch_id="batch_a")
    assert await run(["batches", "other.jsonl"]) == 0
    assert mine.keys_seen()[-1] == ANTHROPIC_CANARY


async def test_a_ledger_service_is_not_printed_raw(work: Path, capsys) -> None:
    path = write_ledger(work / "results.jsonl", service="\x1b]0;pwned\x07", endpoint="https://h/v1")
    with Ledger(path) as ledger:
        ledger.append(Ended(id="batch_x", state="ended\x1b[2J", time="t"))
    assert await run(["batches", "results.jsonl"]) == 0  # an ended batch is not asked about
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b]0;pwned" in out and "\\x1b[2J" in out


# 2. Inspect logs bounded before Inspect's reader sees them ------------------------------------


def grade_argv(work: Path, *answers: Path) -> list[str]:
    argv = ["grade", str(work / "battery"), "--out", str(work / "results.jsonl"), "--no-cache"]
    for path in answers:
        argv += ["--answers", str(path)]
    return argv


def good_log(path: Path, answer: str = "an answer") -> Path:
    """A one-sample Inspect log (`.eval` or `.json` by its suffix), written by Inspect itself."""
    log_api = pytest.importorskip(
        "inspect_ai.log", reason="the inspect extra is not installed (pip install -e '.[inspect]')"
    )
    from inspect_ai.model import ModelOutput

    spec = log_api.EvalSpec(
        created="2026-01-01T00:00:00+00:00",
        task="demo",
        dataset=log_api.EvalDataset(),
        model="openai/good",
        config=log_api.EvalConfig(),
    )
    sample = log_api.EvalSample(
        id="h03", epoch=1, input="q", target="t", output=ModelOutput.from_content("openai/good", answer)
    )
    log = log_api.EvalLog(eval=spec, samples=[sample], status="success")
    log_api.write_eval_log(log, str(path), format="eval" if path.suffix == ".eval" else "json")
    return path


def test_a_deeply_nested_json_file_is_not_read_as_a_log(work: Path) -> None:
    write_battery(work)
    deep = work / "deep.json"
    deep.write_bytes(b'{"answer": ' + b"[" * 200_000 + b"\n")  # 200 KB: Inspect's reader took 24 GB
    done = limited(grade_argv(work, deep), work)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{deep}:1: bad answer" in done.stderr


def test_a_nested_log_is_a_positioned_error_and_the_other_logs_are_graded(work: Path) -> None:
    write_battery(work)
    good = good_log(work / "good.eval")
    deep = work / "deep.json"
    deep.write_bytes(b'{\n  "version": 2,\n  "eval": ' + b"[" * 200_000 + b"\n")
    done = limited(grade_argv(work, deep, good), work)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{deep}:3:" in done.stderr and "nested deeper than 100 levels" in done.stderr
    assert [r.system for r in iter_records(work / "results.jsonl")] == ["openai/good"]


def test_an_eval_zip_bomb_is_refused_before_it_is_inflated(work: Path) -> None:
    write_battery(work)
    bomb = good_log(work / "bomb.eval")
    with zipfile.ZipFile(bomb, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        # 100 MB of answer in about 100 KB; the limit is on what an entry declares inflated.
        text = b'{"id": "h03", "output": {"completion": "' + b"a" * 100_000_000 + b'"}}'
        archive.writestr("samples/h03_epoch_2.json", text)
    del text
    assert bomb.stat().st_size < 1_000_000
    good = good_log(work / "good.json")
    done = limited(grade_argv(work, bomb, good), work)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert (
        f"{bomb}:1: " in done.stderr
        and "'samples/h03_epoch_2.json' declares 100,000,043 bytes" in done.stderr
    )
    assert [r.system for r in iter_records(work / "results.jsonl")] == ["openai/good"]
    assert (work / "results.jsonl").stat().st_size < 100_000


@pytest.mark.parametrize(
    ("name", "content", "fault"),
    [
        ("notzip.eval", b"this is not a zip archive", "not a readable .eval archive"),
        ("badheader.eval", b"PK\x03\x04" + b"\x00" * 200, "not a readable .eval archive"),
        ("types.json", b'{"version": 2, "eval": 5, "samples": "x"}', "not a readable Inspect log"),
        ("cut.json", b'{"version": 2, "eval": {"task": ', "not a readable Inspect log"),
    ],
)
def test_a_malformed_log_is_named_and_the_others_are_graded(
    work: Path, capsys, name: str, content: bytes, fault: str
) -> None:
    write_battery(work)
    good = good_log(work / "good.eval")
    bad = work / name
    bad.write_bytes(content)
    assert main(grade_argv(work, bad, good)) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: " in err and fault in err
    assert [r.system for r in iter_records(work / "results.jsonl")] == ["openai/good"]


def test_an_oversized_answer_in_a_log_is_stored_cut(work: Path, capsys) -> None:
    write_battery(work)
    answer = "é" + "x" * 300_000
    log = good_log(work / "big.eval", answer)
    assert main([*grade_argv(work, log), "--max-answer-bytes", "1000"]) == 0
    (record,) = list(iter_records(work / "results.jsonl"))
    assert record.cause == "oversized" and record.answer == answer[:999]
    whole = answer.encode("utf-8")
    assert f"{len(whole)} bytes" in record.reason and hashlib.sha256(whole).hexdigest() in record.reason


# 3. Judge calls follow no redirect ------------------------------------------------------------


def answers(work: Path) -> Path:
    path = work / "answers.jsonl"
    path.write_text('{"system": "s", "question": "h03", "answer": "an answer"}\n', encoding="utf-8")
    return path


@pytest.mark.parametrize(("judge", "status"), [("anthropic:m", 307), ("anthropic:m", 308), ("url", 307)])
async def test_a_judge_redirect_is_an_error_and_the_key_does_not_follow(
    work: Path, recorder, monkeypatch, capsys, judge: str, status: int
) -> None:
    write_battery(work, t1=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_CANARY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_CANARY)
    thief = await recorder()
    port = thief.url.rsplit(":", 1)[1]
    redirector = await recorder(status, {}, {"Location": f"http://localhost:{port}/v1/messages"})
    if judge == "url":
        judge = redirector.url
    else:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", redirector.url)
    argv = [*grade_argv(work, answers(work)), "--judge", judge, "--model", "m", "--retries", "0"]
    assert await run(argv) == 1
    (record,) = list(iter_records(work / "results.jsonl"))
    assert record.verdict == "error"
    assert f"HTTP {status}, a redirect to localhost" in record.reason and "not followed" in record.reason
    assert len(redirector.requests) == 1 and thief.requests == []


async def test_a_batch_service_redirect_is_not_followed(work: Path, recorder, monkeypatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_CANARY)
    thief = await recorder()
    redirector = await recorder(308, {}, {"Location": thief.url.replace("127.0.0.1", "localhost") + "/v1/x"})
    write_ledger(work / "results.jsonl", service="openai", endpoint=redirector.url + "/v1")
    assert await run(["batches", "results.jsonl", "--judge", redirector.url]) == 1
    err = capsys.readouterr().err
    assert "HTTP 308, a redirect to localhost" in err
    assert len(redirector.requests) == 1 and thief.requests == []


# 8. Batch replies: keys scrubbed from ids and states, size-limited, split in linear time -------


async def test_a_key_in_a_batch_id_or_state_is_not_printed(work: Path, recorder, monkeypatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_CANARY)
    echo = await recorder(200, {"id": f"batch_{OPENAI_CANARY}", "status": f"in_progress {OPENAI_CANARY}"})
    write_ledger(work / "results.jsonl", service="openai", endpoint=echo.url + "/v1")
    assert await run(["batches", "results.jsonl", "--judge", echo.url]) == 0
    captured = capsys.readouterr()
    assert OPENAI_CANARY not in captured.out + captured.err and "[redacted]" in captured.out


async def test_a_batch_control_reply_is_size_limited(work: Path, recorder, monkeypatch, capsys) -> None:
    huge = await recorder(200, {"id": "batch_x", "status": "in_progress", "pad": "x" * 2_000_000})
    write_ledger(work / "results.jsonl", service="openai", endpoint=huge.url + "/v1")
    assert await run(["batches", "results.jsonl", "--judge", huge.url]) == 1
    assert "a reply over 524,288 bytes" in capsys.readouterr().err


def test_result_lines_are_split_in_linear_time_and_a_long_one_is_dropped() -> None:
    from tabench_dsl.grading.batch.service import LineSplitter

    splitter = LineSplitter(100)
    lines = (
        splitter.feed(b"ab") + splitter.feed(b"c\n\nd") + splitter.feed(b"x" * 200) + splitter.feed(b"\ne")
    )
    assert lines + splitter.end() == [b"abc", b"e"]
    # One long line in many small chunks: each byte is looked at once (no re-split of what came).
    splitter = LineSplitter(10_000_000)
    for _ in range(20_000):
        assert splitter.feed(b"y" * 256) == []
    assert splitter.end() == [b"y" * 5_120_000]


# 4. Every output through one door: never through a link, never over a file not ours ----------


def results_file(work: Path) -> Path:
    path = work / "results.jsonl"
    write_battery(work)
    assert main([*grade_argv(work, answers(work))]) == 0
    return path


@pytest.mark.parametrize("dangling", [True, False])
def test_no_output_is_written_through_a_link(work: Path, capsys, dangling: bool) -> None:
    results = results_file(work)
    target = work / "elsewhere" / "target.txt"
    target.parent.mkdir()
    if not dangling:
        target.write_text("the user's own file\n", encoding="utf-8")
    commands = {
        "report.html": ["report", str(results), "--html", "{out}"],
        "export.csv": ["export", str(results), "--format", "csv", "--out", "{out}"],
        "again.jsonl": ["grade", str(work / "battery"), "--answers", str(answers(work)), "--out", "{out}"],
    }
    for name, argv in commands.items():
        link = work / name
        link.symlink_to(target)
        capsys.readouterr()
        assert main([arg.replace("{out}", str(link)) for arg in argv]) == 2, name
        err = capsys.readouterr().err
        assert "is a symbolic link; tabench never writes through a link" in err, (name, err)
        assert target.exists() is not dangling
        if not dangling:
            assert target.read_text(encoding="utf-8") == "the user's own file\n"
        link.unlink()


def test_a_lock_link_shipped_in_a_battery_is_not_written_through(work: Path, capsys) -> None:
    battery = write_battery(work)
    target = work / "elsewhere.txt"
    (battery / "tabench.lock").symlink_to(target)
    assert main(["compile", str(battery), "--lock"]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert not target.exists() and (battery / "tabench.lock").is_symlink()


def test_appending_never_goes_through_a_link_even_past_the_check(work: Path) -> None:
    from tabench_dsl.core.errors import UsageError
    from tabench_dsl.store.results import ResultsWriter

    target = work / "target.jsonl"
    (work / "link.jsonl").symlink_to(target)
    with pytest.raises(UsageError, match="symbolic link"):
        ResultsWriter(work / "link.jsonl")
    with pytest.raises(UsageError, match="symbolic link"):
        Ledger(work / "link.jsonl")
    assert not target.exists()


@pytest.mark.parametrize("kind", ["foreign", "dangling"])
def test_grade_batch_never_cuts_or_appends_to_a_ledger_it_did_not_write(
    work: Path, capsys, kind: str
) -> None:
    write_battery(work)
    ledger = ledger_path(work / "results.jsonl")
    target = work / "notes.txt"
    if kind == "foreign":
        ledger.write_bytes(b"my notes\nlast line without a break")
    else:
        ledger.symlink_to(target)
    argv = [*grade_argv(work, answers(work)), "--judge", "http://127.0.0.1:9/v1", "--model", "m", "--batch"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(ledger) in err
    if kind == "foreign":
        assert "is not a batch ledger written by tabench" in err
        assert ledger.read_bytes() == b"my notes\nlast line without a break"
    else:
        assert "symbolic link" in err and not target.exists()


# 5. Spreadsheet-safe CSV; 8. Parquet export of out-of-range counts ---------------------------

FORMULAS = ['=HYPERLINK("http://x","y")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1)", "\tx", "\rx"]


def test_every_csv_cell_that_starts_like_a_formula_gets_a_quote(work: Path, capsys) -> None:
    import csv

    from support.make_results import make_record, write_results

    records = [make_record(f, "q1", "pass", answer=f) for f in FORMULAS]
    results = write_results(work / "results.jsonl", records)
    assert main(["export", str(results), "--format", "csv", "--out", str(work / "out.csv")]) == 0
    with open(work / "out.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["system"] for r in rows) == sorted("'" + f for f in FORMULAS)
    assert sorted(r["answer"] for r in rows) == sorted("'" + f for f in FORMULAS)
    assert {r["verdict"] for r in rows} == {"pass"}  # ordinary text is left as it is
    capsys.readouterr()
    assert main(["totals", str(results), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sorted(r["system"] for r in rows) == sorted("'" + f for f in FORMULAS)


def test_parquet_export_survives_out_of_range_token_counts(work: Path) -> None:
    parquet = pytest.importorskip(
        "pyarrow.parquet", reason="the parquet extra is not installed (pip install -e '.[parquet]')"
    )
    from support.make_results import make_record, write_results

    from tabench_dsl.core.records import Tokens

    record = make_record("s", "q1", "pass")
    attempt = msgspec.structs.replace(record.attempts[0], tokens=Tokens(prompt=2**64 - 1, completion=2**63))
    results = write_results(work / "results.jsonl", [msgspec.structs.replace(record, attempts=[attempt] * 2)])
    assert main(["export", str(results), "--format", "parquet", "--out", str(work / "out.parquet")]) == 0
    table = parquet.read_table(work / "out.parquet").to_pylist()
    assert table[0]["prompt_tokens"] is None and table[0]["completion_tokens"] is None


# 6. A reply cache is the user's -------------------------------------------------------------


def judge_argv(work: Path, url: str, out: str, *extra: str) -> list[str]:
    battery = str(work / "battery")
    return [
        "grade",
        battery,
        "--answers",
        str(answers(work)),
        "--judge",
        url,
        "--model",
        "m",
        "--out",
        out,
        *extra,
    ]


async def test_a_cache_shipped_in_the_working_folder_is_not_used(work: Path, judge_server) -> None:
    write_battery(work, t1=False)
    server = await judge_server([PASS_REPLY])
    # A repository cloned with its own `.tabench/cache.sqlite`, where every row says "pass".
    assert (
        await run(judge_argv(work, server.url, "r1.jsonl", "--cache", str(work / ".tabench/cache.sqlite")))
        == 0
    )
    calls = server.calls
    assert await run(judge_argv(work, server.url, "r2.jsonl")) == 0
    assert server.calls == calls + 1  # asked again: the working folder's cache is not the default


@pytest.mark.parametrize(
    "planted",
    [
        "content = X'00ff'",
        "prompt_tokens = 'many'",
        "completion_tokens = -5",
        "cached_prompt_tokens = 1.5",
        "content = NULL",
    ],
)
async def test_a_bad_cache_row_is_a_miss(work: Path, judge_server, planted: str) -> None:
    import sqlite3

    write_battery(work, t1=False)
    server = await judge_server([PASS_REPLY])
    cache = work / "mine.sqlite"
    assert await run(judge_argv(work, server.url, "r1.jsonl", "--cache", str(cache))) == 0
    db = sqlite3.connect(cache)
    if "NULL" in planted:  # the column is NOT NULL: a hostile file is made without that rule
        db.execute("ALTER TABLE replies RENAME TO old")
        db.execute("CREATE TABLE replies AS SELECT * FROM old")
        db.execute("DROP TABLE old")
    db.execute(f"UPDATE replies SET {planted}")
    db.commit()
    db.close()
    calls = server.calls
    assert await run(judge_argv(work, server.url, "r2.jsonl", "--cache", str(cache))) == 0
    assert server.calls == calls + 1
    assert [r.verdict for r in iter_records(work / "r2.jsonl")] == ["pass"]


@pytest.mark.skipif(
    os.getuid() != 0, reason="giving a file to another user needs root: run the tests as root (CI does)"
)
@pytest.mark.parametrize("owned", ["file", "folder"])
async def test_a_default_cache_another_user_owns_is_not_opened(work: Path, capsys, owned: str) -> None:
    write_battery(work, t1=False)
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "tabench" / "cache.sqlite"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(b"")
    os.chown(cache if owned == "file" else cache.parent, 54321, 54321)
    assert await run(judge_argv(work, "http://127.0.0.1:9/v1", "r.jsonl")) == 2
    err = capsys.readouterr().err
    assert "belongs to another user and is not opened" in err
    assert cache.read_bytes() == b""
    # Named, it is the user's choice.
    assert "--cache" in err


def test_a_cache_is_never_opened_through_a_link(work: Path, capsys) -> None:
    write_battery(work, t1=False)
    target = work / "elsewhere.sqlite"
    (work / "link.sqlite").symlink_to(target)
    argv = judge_argv(work, "http://127.0.0.1:9/v1", "r.jsonl", "--cache", str(work / "link.sqlite"))
    assert main(argv) == 2
    assert "symbolic link" in capsys.readouterr().err and not target.exists()

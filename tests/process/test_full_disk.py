"""A disk that refuses writes under the results file or the reply cache: the grading ends with one
line naming the file (exit 2), never a traceback, and every record written before stays whole, so
`--resume` continues from it.

The refusals are real, made by the operating system, not by patching tabench: the grading runs in
a subprocess whose file size limit (RLIMIT_FSIZE, with SIGXFSZ ignored so the process is not killed
by it) makes `write` fail with EFBIG once a file would pass the limit; and, where unprivileged user
namespaces allow it, with the reply cache on a tmpfs of a few pages, where SQLite's writes fail with
ENOSPC ("database or disk is full").
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.helpers_grading import verdict, write_battery

from tabench_dsl.store.results import iter_records

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "lark-internals"

#: Runs `tabench ARGV...` under a file size limit of LIMIT bytes: `python -c LIMITED LIMIT ARGV...`.
#: COMMIT_EVERY_REPLY=1 makes the reply cache commit each reply on its own (a commit is a
#: page-sized WAL frame), so the cache passes the limit long before the results file does.
LIMITED = """
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[1])
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
if os.environ.get("COMMIT_EVERY_REPLY"):
    import tabench_dsl.grading.cache
    tabench_dsl.grading.cache.COMMIT_SECONDS = 0.0
from tabench_dsl.cli import main
sys.exit(main(sys.argv[2:]))
"""

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="file size limits are POSIX")


def _env(**extra: str) -> dict[str, str]:
    """This environment without keys or a cache path, so only the judge the test names is asked."""
    drop = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "TABENCH_CACHE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return {**env, **extra}


def _error_lines(err: str) -> list[str]:
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith("tabench: error:")]


def _whole_records(path: Path) -> list:
    """The records of `path`, checking that every line is one (none torn, none half-written)."""
    problems: list[str] = []
    records = list(iter_records(path, on_problem=problems.append))
    assert problems == [] and path.read_bytes().endswith(b"\n")
    return records


def test_results_file_refused_mid_run_keeps_every_record_and_resume_finishes(tmp_path: Path) -> None:
    answers = EXAMPLE / "answers.jsonl"
    total = sum(1 for line in answers.read_bytes().splitlines() if line.strip())
    out = tmp_path / "r.jsonl"
    argv = ["grade", str(EXAMPLE), "--answers", str(answers), "--out", str(out), "--judge", "builtin"]
    # Room for a few records: the write that passes 5,000 bytes is refused half-way.
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, "5000", *argv],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert _error_lines(done.stderr) == [
        f"tabench: error: {out}: cannot append a record: File too large; "
        "every record written before it is kept"
    ]
    kept = _whole_records(out)
    assert 0 < len(kept) < total and out.stat().st_size <= 5000

    done = subprocess.run(
        [sys.executable, "-m", "tabench_dsl", *argv, "--resume", "--json"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    records = _whole_records(out)
    assert records[: len(kept)] == kept
    assert len({r.key for r in records}) == len(records) == total


def _answers(folder: Path, count: int) -> Path:
    path = folder / "answers.jsonl"
    questions = ["h01", "h02", "h03"]
    with open(path, "w", encoding="utf-8") as f:
        for i in range(count):
            line = {"system": f"s{i // 3}", "question": questions[i % 3], "answer": f"reply {i}"}
            f.write(json.dumps(line) + "\n")
    return path


async def _grade(
    work: Path, url: str, cache: Path, *prefix: str, env: dict[str, str], extra: tuple[str, ...] = ()
) -> tuple[int, str]:
    """`tabench grade` of work/battery and work/answers.jsonl into work/r.jsonl, run by `prefix`."""
    proc = await asyncio.create_subprocess_exec(
        *prefix,
        "grade",
        str(work / "battery"),
        "--answers",
        str(work / "answers.jsonl"),
        "--out",
        str(work / "r.jsonl"),
        "--judge",
        url,
        "--model",
        "m",
        "--concurrency",
        "2",
        "--cache",
        str(cache),
        *extra,
        cwd=work,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


async def test_reply_cache_refused_mid_run_ends_in_one_line_and_resume_finishes(
    tmp_path: Path, judge_server
) -> None:
    write_battery(tmp_path, t1=False)
    _answers(tmp_path, 12)
    server = await judge_server([verdict("pass", "names the stages")])
    cache = tmp_path / "cache.sqlite"
    # SQLite's shared-memory index alone is 32 KiB; 40,000 bytes leave the write-ahead log room for
    # a few commits of one page each, while the results file (well under 1 KiB a record) stays far below.
    status, err = await _grade(
        tmp_path, server.url, cache, sys.executable, "-c", LIMITED, "40000", env=_env(COMMIT_EVERY_REPLY="1")
    )
    assert status == 2, err
    (line,) = _error_lines(err)
    assert line.startswith(f"tabench: error: {cache}: cannot write the reply cache (")
    assert line.endswith("); give another --cache PATH or --no-cache")
    kept = _whole_records(tmp_path / "r.jsonl")
    assert 0 < len(kept) < 12

    status, err = await _grade(
        tmp_path, server.url, cache, sys.executable, "-m", "tabench_dsl", env=_env(), extra=("--resume",)
    )
    assert status == 0, err
    records = _whole_records(tmp_path / "r.jsonl")
    assert records[: len(kept)] == kept
    assert len({r.key for r in records}) == len(records) == 12


def _user_namespaces() -> bool:
    """True when this user may mount a tmpfs in a user and mount namespace of its own."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-r", "-m", "sh", "-c", 'mount -t tmpfs -o size=4k none "$0"', tempfile.gettempdir()],
        capture_output=True,
    )
    return probe.returncode == 0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tmpfs in a user namespace is Linux")
async def test_reply_cache_on_a_full_disk(tmp_path: Path, judge_server) -> None:
    if not _user_namespaces():
        pytest.skip(
            "unprivileged user namespaces are not allowed here, so there is no small tmpfs to fill "
            "(allow them: sysctl -w kernel.unprivileged_userns_clone=1, or run as root)"
        )
    write_battery(tmp_path, t1=False)
    _answers(tmp_path, 12)
    # Replies of 2 KiB: the batch of them needs more pages than the tmpfs has left once SQLite has
    # made its files (32 KiB index, one database page, the write-ahead log's first frames).
    server = await judge_server([verdict("pass", "names the stages " * 120)])
    disk = tmp_path / "small-disk"
    disk.mkdir()
    inside = [
        "unshare",
        "-r",
        "-m",
        "sh",
        "-c",
        'mount -t tmpfs -o size=56k tabench-test "$0" && exec "$@"',
        str(disk),
        sys.executable,
        "-m",
        "tabench_dsl",
    ]
    status, err = await _grade(tmp_path, server.url, disk / "cache.sqlite", *inside, env=_env())
    assert status == 2, err
    (line,) = _error_lines(err)
    assert line == (
        f"tabench: error: {disk / 'cache.sqlite'}: cannot write the reply cache (database or "
        "disk is full); give another --cache PATH or --no-cache"
    )
    records = _whole_records(tmp_path / "r.jsonl")
    assert 0 < len(records) <= 12 and all(r.verdict == "pass" for r in records)


def test_decisions_file_refused_keeps_the_decisions_before(tmp_path: Path) -> None:
    from support.make_results import small_results, write_results

    from tabench_dsl.store.decisions import decisions_path, load_decisions

    results = write_results(tmp_path / "run.jsonl", small_results())
    decisions = decisions_path(results)
    # One decision line is about 200 bytes: the first fits under 300, the second is refused half-way.
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, "300", "adjudicate", str(results), "--reviewer", "ana"],
        input="p\n\np\n\n",
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert _error_lines(done.stderr) == [
        f"tabench: error: {decisions}: cannot append the decision: File too large; "
        "the decisions before it are kept"
    ]
    assert decisions.read_bytes().count(b"\n") == 1 and decisions.read_bytes().endswith(b"\n")
    assert [d.verdict for d in load_decisions(decisions)] == ["pass"]


def test_a_full_disk_during_merge_names_the_file_and_keeps_out(tmp_path: Path) -> None:
    """`merge` into an OUT among its inputs under a file size limit smaller than the merged file:
    one line naming OUT (exit 2), and OUT left byte for byte as it was."""
    battery = write_battery(tmp_path)
    rows = [{"system": f"s{n}", "question": "h02", "answer": "7311"} for n in range(40)]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("x.jsonl", "y.jsonl"):
        argv = ["grade", str(battery), "--answers", "a.jsonl", "--question", "h02", "--out", name]
        done = subprocess.run([sys.executable, "-c", LIMITED, "0", *argv], cwd=tmp_path, env=_env(),
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
    before = (tmp_path / "x.jsonl").read_bytes()
    limit = len(before) + 100  # room for x's records, not for y's besides
    argv = ["merge", "x.jsonl", "x.jsonl", "y.jsonl"]
    done = subprocess.run([sys.executable, "-c", LIMITED, str(limit), *argv], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = _error_lines(done.stderr)
    assert line.startswith("tabench: error: x.jsonl: could not write the file (File too large)"), line
    assert (tmp_path / "x.jsonl").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []

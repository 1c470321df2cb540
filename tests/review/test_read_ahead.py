"""Work on a file's ranges begun in a forked child before this process is free
(`store.read_ahead.ReadAhead`): every range read once, by one process or the other, the results in
file order; what stops the child raised here; a file too small to share read here alone. And
`line_ranges.ForkedWork`, the forked child every shared read uses."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tabench_dsl.store.line_ranges import ForkedWork, line_ranges
from tabench_dsl.store.read_ahead import PIECES, ReadAhead

#: The test's own process, which reads its ranges slowly: the child, begun first, takes some.
HERE = os.getpid()


def lines_of(path: Path, start: int, stop: int) -> tuple[int, bytes]:
    """The range's bytes, and the process that read them."""
    if os.getpid() == HERE:
        time.sleep(0.02)
    with path.open("rb") as f:
        f.seek(start)
        return os.getpid(), f.read(stop - start)


def after_both_began(path: Path) -> Callable[[int, int], tuple[int, bytes]]:
    """`lines_of` a range, read once both processes hold one: however either is scheduled (a
    loaded machine may start the child late, or run it alone), neither reads every range."""
    met = path.parent / "met"
    met.mkdir()

    def read(start: int, stop: int) -> tuple[int, bytes]:
        (met / str(os.getpid())).touch()
        deadline = time.monotonic() + 60
        while len(list(met.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        return lines_of(path, start, stop)

    return read


@pytest.fixture
def numbered(tmp_path: Path) -> Path:
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"".join(b'{"n": %d}\n' % n for n in range(5000)))
    return path


def test_every_range_is_read_once_in_file_order_by_both_processes(
    numbered: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")
    ahead = ReadAhead(numbered, after_both_began(numbered))
    readers, parts = zip(*ahead.results(), strict=True)
    assert b"".join(parts) == numbered.read_bytes()
    assert len(parts) == len(line_ranges(numbered, PIECES)) > 1
    # Both read, the child from the front and this process from the back: one run of each.
    assert len(set(readers)) == 2 and readers[-1] == os.getpid() and readers[0] != os.getpid()
    assert sorted(readers, key=lambda pid: pid == os.getpid()) == list(readers)


def test_with_join_each_process_gives_one_result_of_its_ranges_in_file_order(
    numbered: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")

    def join(earlier: tuple[int, bytes], later: tuple[int, bytes]) -> tuple[int, bytes]:
        # A process joins only ranges it read itself (raised here from the child too).
        assert earlier[0] == later[0] == os.getpid()
        return earlier[0], earlier[1] + later[1]

    ahead = ReadAhead(numbered, after_both_began(numbered), join=join)
    readers, parts = zip(*ahead.results(), strict=True)
    assert b"".join(parts) == numbered.read_bytes()
    # Of 16 ranges, one result a process: the child's run from the front, then this one's.
    assert len(ahead.ranges) == PIECES and len(parts) == 2
    assert readers[0] != os.getpid() == readers[1]


def test_a_part_of_the_bytes_only(numbered: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")
    start, stop = line_ranges(numbered, 3)[1]
    ahead = ReadAhead(numbered, lambda a, b: lines_of(numbered, a, b)[1], start, stop)
    assert b"".join(ahead.results()) == numbered.read_bytes()[start:stop]


def test_what_stops_the_child_is_raised_here(numbered: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")

    def work(start: int, stop: int) -> int:
        if os.getpid() == HERE:
            time.sleep(0.05)  # the child, begun first, reaches the first range before this does
        elif start == 0:
            raise ValueError(f"no range from {start}")
        return start

    with pytest.raises(ValueError, match="no range from 0"):
        ReadAhead(numbered, work).results()


def test_a_small_file_is_read_here_alone(numbered: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TABENCH_READ_PROCESSES", raising=False)
    ahead = ReadAhead(numbered, lambda start, stop: lines_of(numbered, start, stop))
    assert [reader for reader, _ in ahead.results()] == [os.getpid()]


def test_cancelled_the_child_is_reaped(numbered: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")
    ahead = ReadAhead(numbered, lambda start, stop: lines_of(numbered, start, stop))
    assert ahead.forked
    ahead.cancel()
    assert not ahead.forked
    with pytest.raises(RuntimeError, match="cancelled"):  # never the ranges read here alone
        ahead.results()


def test_forked_work_gives_back_what_the_child_returned_or_raised(tmp_path: Path) -> None:
    marker = tmp_path / "ran"

    def returned() -> tuple[int, int]:
        marker.write_text(str(os.getpid()))  # runs in the child: its pid is not this process's
        return (6, 7)

    assert ForkedWork(returned).result() == (6, 7)
    assert int(marker.read_text()) != os.getpid()

    def raised() -> None:
        raise ValueError("bad line 3")

    with pytest.raises(ValueError, match="bad line 3"):
        ForkedWork(raised).result()


def test_a_forked_child_that_dies_is_named_and_a_cancelled_one_is_reaped() -> None:
    with pytest.raises(RuntimeError, match=r"stopped \(exit 3\)"):
        ForkedWork(lambda: os._exit(3)).result()

    hanging = ForkedWork(lambda: time.sleep(60))
    started = time.monotonic()
    hanging.cancel()  # killed, not left to run out its minute (nor waited on)
    assert time.monotonic() - started < 30
    hanging.cancel()  # a second cancel does nothing

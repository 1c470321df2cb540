"""The viewer's columns kept in pages (`column_pages`): a later view loads only the pages its
requests read and answers as the in-memory index does; a page missing, damaged or of another
file is never used (read again from the file while it is unchanged, else an error naming it);
the pages of a larger file's columns do not outlive them. Pages of 4 values here, so a small
file spans many."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import msgspec
import pytest
from support.make_results import make_record, many_results, write_results

from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.records import record_encoder
from tabench_dsl.review.viewer import column_pages
from tabench_dsl.review.viewer.disk_index import DiskIndex, load_disk_index
from tabench_dsl.review.viewer.queries import Filters, Index
from tabench_dsl.review.viewer.run import load_run
from tabench_dsl.store.results_index import index_path

ENCODE = msgspec.json.Encoder().encode
QUERIES = [
    Filters(),
    *(Filters(verdict=v) for v in ("pass", "fail", "adjudicate", "error")),
    Filters(system="sys-02"),
    Filters(human="undecided"),
    Filters(tier="t1", verdict="pass"),
]


@pytest.fixture(autouse=True)
def small_pages(monkeypatch) -> None:
    monkeypatch.setattr(column_pages, "PAGE_SHIFT", 2)
    monkeypatch.setattr(column_pages, "PAGE_VALUES", 4)


def answers(index: Index) -> list[bytes]:
    out = [ENCODE(index.meta()), ENCODE(index.totals_payload()), str(index.awaiting()).encode()]
    for f in QUERIES:
        for offset, limit in ((0, 50), (5, 3)):
            out.append(re.sub(rb'"time":"[^"]*"', b"", ENCODE(index.page(f, offset, limit))))
    return out


def assert_same(path: Path) -> DiskIndex:
    memory, disk = Index(load_run(path), reviewer="ana"), load_disk_index(path, reviewer="ana")
    assert answers(disk) == answers(memory)
    return disk


def kept_pages(path: Path) -> set[str]:
    with sqlite3.connect(index_path(path)) as db:
        names = {row[0].split(":")[0] for row in db.execute("SELECT variant FROM value_of")}
    db.close()
    return {name for name in names if name.startswith("viewer-columns-")}


def test_a_later_view_loads_only_the_pages_its_first_requests_read(tmp_path: Path) -> None:
    path = write_results(tmp_path / "run.jsonl", many_results(120, systems=4))
    assert_same(path)  # the first view: the columns read and kept, 30 pages each
    assert "viewer-columns-verdict-29" in kept_pages(path)
    disk = load_disk_index(path)
    disk.meta(), disk.totals_payload(), disk.systems_page("", 0, 50), disk.page(Filters(), 0, 6)
    table = disk.table
    loaded = {name: len(column._pages) + 30 * column.loaded for name, column in table.columns.items()}
    assert loaded == {**dict.fromkeys(loaded, 0), "system": 2, "question": 2}
    assert (len(table.offsets._pages), len(table.lengths._pages)) == (2, 2)
    assert_same(path)  # and the same answers as the records read whole


def test_a_decision_is_counted_on_the_pages_as_on_the_whole(tmp_path: Path) -> None:
    path = write_results(tmp_path / "run.jsonl", many_results(120, systems=4))
    assert_same(path)
    disk = load_disk_index(path, reviewer="ana")
    waiting = disk.awaiting()
    adjudicated = next(r for r in load_run(path).records if r.verdict == "adjudicate")
    disk.decide(adjudicated.system, adjudicated.question, "pass")
    assert disk.awaiting() == waiting - 1
    assert not disk.table.columns["verdict"].loaded  # found by bisection, counted from the head
    assert_same(path)  # the decision read back from the decisions file, by a fresh view


@pytest.mark.parametrize("damage", ["deleted", "altered"])
def test_a_page_the_index_does_not_hold_as_signed_is_read_from_the_file_again(
    tmp_path: Path, damage: str
) -> None:
    path = write_results(tmp_path / "run.jsonl", many_results(120, systems=4))
    assert_same(path)
    with sqlite3.connect(index_path(path)) as db:
        if damage == "deleted":
            db.execute("DELETE FROM value_of WHERE variant LIKE 'viewer-columns-verdict-7:%'")
        else:  # the codes of another page, under this page's name: its signature fails
            db.execute(
                "UPDATE value_of SET body = (SELECT body FROM value_of WHERE variant LIKE "
                "'viewer-columns-verdict-8:%') WHERE variant LIKE 'viewer-columns-verdict-7:%'"
            )
    db.close()
    assert_same(path)
    assert "viewer-columns-verdict-7" in kept_pages(path)  # kept again
    assert_same(path)


def test_a_page_of_the_file_as_it_grew_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = write_results(tmp_path / "run.jsonl", many_results(120, systems=4))
    assert_same(path)
    disk = load_disk_index(path)
    disk.page(Filters(), 0, 5)
    with open(path, "ab") as f:  # graded on; another view of it keeps the grown file's columns
        f.write(record_encoder.encode(make_record("sys-00", "q-new", "pass")) + b"\n")
    load_disk_index(path)
    with pytest.raises(UsageError, match=re.escape(str(path)) + ".*restart `tabench view`"):
        disk.page(Filters(verdict="fail"), 0, 5)


def test_the_pages_of_a_larger_file_do_not_outlive_its_columns(tmp_path: Path) -> None:
    records = many_results(120, systems=4)
    path = write_results(tmp_path / "run.jsonl", records)
    assert_same(path)
    assert "viewer-columns-offsets-29" in kept_pages(path)
    write_results(path, records[:20])
    os.utime(path, ns=(1, 1))
    assert_same(path)
    assert {name.rsplit("-", 1)[1] for name in kept_pages(path)} == {str(n) for n in range(5)}


def test_pages_written_in_many_transactions_read_back_as_one_write_of_them(
    tmp_path: Path, monkeypatch
) -> None:
    from tabench_dsl.store import results_index

    monkeypatch.setattr(results_index, "BATCH_BYTES", 40)  # a transaction every few pages
    records = many_results(120, systems=4)
    path = write_results(tmp_path / "run.jsonl", records)
    assert_same(path)
    assert len(kept_pages(path)) == 11 * 30
    assert not load_disk_index(path).table.columns["verdict"].loaded  # loaded back, not read
    write_results(path, records[:20])
    os.utime(path, ns=(1, 1))
    assert_same(path)
    assert len(kept_pages(path)) == 11 * 5

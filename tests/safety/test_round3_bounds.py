"""Round 3, sizes set by someone else's file: `totals --csv` of a results file whose systems each
name their own facet stays as large as `totals --json` (no systems x facets table)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from support.helpers_grading import write_battery

from tabench_dsl.cli import main
from tabench_dsl.review.export import MAX_FACET_COLUMNS, MORE_FACETS

SYSTEMS = 1000


@pytest.fixture
def many_facets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A results file of `SYSTEMS` systems, each record naming a facet of its own (and a shared one)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TABENCH_CACHE", raising=False)
    battery = write_battery(tmp_path)
    (tmp_path / "a.jsonl").write_text(json.dumps({"system": "s", "question": "h02", "answer": "7311"}) + "\n")
    assert main(["grade", str(battery), "--answers", "a.jsonl", "--out", "one.jsonl"]) == 0
    record = json.loads((tmp_path / "one.jsonl").read_text().splitlines()[0])
    lines = []
    for n in range(SYSTEMS):
        record.update(system=f"sys{n}", facets={f"own_{n}": True, "shared": True})
        lines.append(json.dumps(record) + "\n")
    (tmp_path / "r.jsonl").write_text("".join(lines))
    return tmp_path


def test_csv_totals_have_a_bounded_number_of_facet_columns(many_facets: Path, capsys) -> None:
    assert main(["totals", "r.jsonl", "--json"]) == 0
    as_json = capsys.readouterr().out
    assert main(["totals", "r.jsonl", "--csv"]) == 0
    text = capsys.readouterr().out
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == SYSTEMS
    facet_columns = [c for c in rows[0] if c.startswith("facets_")]
    assert len(facet_columns) == MAX_FACET_COLUMNS and "facets_shared" in facet_columns
    # No facet is lost: each system's count in a column, or in its other_facets cell.
    for row in rows[:50] + rows[-50:]:
        n = int(row["system"].removeprefix("sys"))
        own = f"own_{n}"
        counted = int(row[f"facets_{own}"]) if f"facets_{own}" in row else json.loads(row[MORE_FACETS])[own]
        assert counted == 1 and row["facets_shared"] == "1"
    assert len(text) < 2 * len(as_json)  # as large as the JSON, not systems x facets


def test_a_batch_results_line_nested_50000_deep_is_a_bad_line_not_a_crash(tmp_path: Path) -> None:
    import asyncio

    from tabench_dsl.core.errors import UsageError
    from tabench_dsl.grading.batch.file_batches import FileBatches

    service = FileBatches(tmp_path)
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    status = asyncio.run(service.submit([service.entry("tb-1", body)]))
    deep = b"[" * 50_000 + b"]" * 50_000
    line = b'{"id": "x", "custom_id": "tb-1", "response": {"status_code": 200, "body": ' + deep + b"}}\n"
    service.results_file(status.id).write_bytes(line)

    async def read() -> list:
        return [x async for x in service.results(status)]

    with pytest.raises(UsageError, match=r"round-1\.results\.jsonl:1:1: not a batch output line"):
        asyncio.run(read())
    with pytest.raises(UsageError, match=r"round-1\.results\.jsonl:1:1: not a batch line"):
        asyncio.run(service.status(status.id))


def test_a_battery_s_lock_nested_50000_deep_is_a_usage_error(tmp_path: Path, capsys) -> None:
    battery = write_battery(tmp_path)
    (battery / "tabench.lock").write_text("[" * 50_000 + "]" * 50_000)
    assert main(["compile", str(battery), "--check"]) == 2
    err = capsys.readouterr().err
    assert "tabench.lock: not a tabench lock file" in err and "Traceback" not in err

"""`tabench export` (CSV, Parquet) and `tabench totals --csv`: one row per standing record with
decisions applied, read back with the csv module and pyarrow; the optional extras' messages."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import msgspec
import pytest
from support.make_results import HOSTILE_ANSWER, make_record, small_results, write_results

from tabench_dsl.cli import main
from tabench_dsl.core.extras import install_command, installed_from, pip_command
from tabench_dsl.core.price import Price
from tabench_dsl.core.records import Decision
from tabench_dsl.review.export import EARLIER_COLUMNS, RECORD_COLUMNS
from tabench_dsl.store.decisions import append_decision, decisions_path

#: An answer CSV must quote: a comma, quotes, a line break and a carriage return.
CSV_HOSTILE = 'first, "second"\r\nthird\n'


@pytest.fixture
def results(tmp_path: Path) -> Path:
    path = write_results(
        tmp_path / "results.jsonl",
        [*small_results(), make_record("agent-c", "h01", "pass", answer=CSV_HOSTILE)],
    )
    # agent-a's h04 was adjudicate: a person passes it.
    append_decision(
        decisions_path(path),
        Decision(
            system="agent-a",
            question="h04",
            verdict="pass",
            prompt_sha256=next(r for r in small_results() if r.key == ("agent-a", "h04")).prompt_sha256,
            reviewer="ana",
            time="2026-11-29T13:00:00Z",
            note="read it twice",
        ),
    )
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_export_csv_has_one_row_per_standing_record_with_decisions_applied(
    results: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "records.csv"
    assert main(["export", str(results), "--format", "csv", "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    rows = read_csv(out)
    assert list(rows[0]) == [name for name, _ in RECORD_COLUMNS]
    # Ten records, one re-graded: nine pairs, the last record of agent-a/h03 standing.
    assert len(rows) == 9
    by_pair = {(r["system"], r["question"]): r for r in rows}
    assert by_pair["agent-a", "h03"]["verdict"] == "fail"
    decided = by_pair["agent-a", "h04"]
    assert (decided["verdict"], decided["tool_verdict"], decided["decided_by"]) == (
        "pass",
        "adjudicate",
        "ana",
    )
    assert decided["decision_note"] == "read it twice"
    # Answers with markup, quotes, commas and line breaks come back as written (RFC 4180 quoting).
    assert decided["answer"] == HOSTILE_ANSWER
    assert by_pair["agent-c", "h01"]["answer"] == CSV_HOSTILE
    assert by_pair["agent-b", "h02"]["cause"] == "malformed"
    assert by_pair["agent-a", "h01"]["tier"] == "t1" and by_pair["agent-a", "h01"]["judge_calls"] == "0"
    assert json.loads(by_pair["agent-a", "h02"]["facets"]) == {"missing_minor": True}
    assert by_pair["agent-b", "h01"]["decided_by"] == "" and by_pair["agent-b", "h01"][
        "injection_suspect"
    ] in (
        "true",
        "false",
    )
    # The verdict column counts as the totals do.
    assert sum(r["verdict"] == "pass" for r in rows) == 5


def test_export_parquet_reads_back_typed(results: Path, tmp_path: Path) -> None:
    parquet = pytest.importorskip(
        "pyarrow.parquet", reason="the parquet extra is not installed (pip install -e '.[parquet]')"
    )
    out = tmp_path / "records.parquet"
    assert main(["export", str(results), "--format", "parquet", "--out", str(out)]) == 0
    table = parquet.read_table(out)
    assert table.num_rows == 9
    assert table.column_names == [name for name, _ in RECORD_COLUMNS]
    assert str(table.schema.field("judge_calls").type) == "int64"
    assert str(table.schema.field("injection_suspect").type) == "bool"
    rows = table.to_pylist()
    decided = next(r for r in rows if (r["system"], r["question"]) == ("agent-a", "h04"))
    assert decided["verdict"] == "pass" and decided["answer"] == HOSTILE_ANSWER
    assert next(r for r in rows if r["question"] == "h01" and r["system"] == "agent-b")["cause"] is None
    # A second export replaces the first (it is one tabench wrote).
    assert main(["export", str(results), "--format", "parquet", "--out", str(out)]) == 0


def test_export_never_writes_over_its_input_or_a_foreign_file(results: Path, tmp_path: Path, capsys) -> None:
    before = results.read_bytes()
    assert main(["export", str(results), "--format", "csv", "--out", str(results)]) == 2
    assert "the results file it reads" in capsys.readouterr().err
    assert results.read_bytes() == before
    notes = tmp_path / "notes.csv"
    notes.write_text("a,b\n1,2\n", encoding="utf-8")
    assert main(["export", str(results), "--format", "csv", "--out", str(notes)]) == 2
    assert "is not an export written by tabench" in capsys.readouterr().err
    assert notes.read_text(encoding="utf-8") == "a,b\n1,2\n"
    out = tmp_path / "records.csv"
    assert main(["export", str(results), "--format", "csv", "--out", str(out)]) == 0
    assert main(["export", str(results), "--format", "csv", "--out", str(out)]) == 0  # its own: replaced


def test_parquet_without_the_extra_names_it(
    results: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An import of a module set to None in sys.modules fails as a missing package does.
    for name in [n for n in sys.modules if n == "pyarrow" or n.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    out = tmp_path / "records.parquet"
    assert main(["export", str(results), "--format", "parquet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    # what works where tabench came from, with the pip of the environment running it
    hint = install_command("parquet", installed_from(), Path.cwd(), pip=pip_command(Path.cwd()))
    assert err.endswith(f"(pyarrow is not installed): {hint}\n")
    assert "Traceback" not in err and not out.exists()


def test_totals_csv_is_the_per_system_totals(results: Path, capsys) -> None:
    assert main(["totals", str(results), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert main(["totals", str(results), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["system"] for r in rows] == [s["system"] for s in document["systems"]]
    for row, system in zip(rows, document["systems"], strict=True):
        for key in ("answers", "pass", "fail", "adjudicate", "error", "human_pass", "judge_calls"):
            assert int(row[key]) == system[key], key
        for key in ("prompt", "cached_prompt", "completion", "cache_write"):
            assert int(row[f"tokens_{key}"]) == system["tokens"][key], key
        assert row["cost_usd"] == ("" if system["cost_usd"] is None else str(system["cost_usd"]))
        assert float(row["score"]) == pytest.approx(system["score"])
        assert "facets" not in row  # a mapping: in --json, not a CSV column


def test_totals_csv_and_json_are_exclusive(results: Path, capsys) -> None:
    assert main(["totals", str(results), "--csv", "--json"]) == 2
    assert "not allowed with" in capsys.readouterr().err


def test_export_has_tags_and_cost_and_replaces_an_earlier_export(tmp_path: Path) -> None:
    judge = msgspec.structs.replace(make_record("a", "q1", "pass").judge, price=Price(input=1.0, output=2.0))
    priced = msgspec.structs.replace(make_record("a", "q1", "pass"), tags=["easy", "topic:http"], judge=judge)
    unpriced = make_record("a", "q2", "fail")
    results = write_results(tmp_path / "results.jsonl", [priced, unpriced, make_record("a", "q3", "t1")])
    out = tmp_path / "records.csv"
    # An export written before the new columns is one tabench wrote: it may be replaced.
    out.write_text(",".join(EARLIER_COLUMNS) + "\n", encoding="utf-8")
    assert main(["export", str(results), "--format", "csv", "--out", str(out)]) == 0
    rows = {r["question"]: r for r in read_csv(out)}
    assert rows["q1"]["tags"] == "easy; topic:http" and rows["q2"]["tags"] == ""
    # 812 prompt and 41 completion tokens at $1 and $2 per million.
    assert float(rows["q1"]["cost_usd"]) == pytest.approx((812 * 1.0 + 41 * 2.0) / 1e6)
    assert rows["q2"]["cost_usd"] == ""  # a billed call with no price: unknown
    assert float(rows["q3"]["cost_usd"]) == 0.0  # a T1 pass: no call


def test_totals_csv_has_every_systems_facets_and_a_rounded_score(tmp_path: Path, capsys) -> None:
    records = [
        make_record("a", "q1", "pass"),
        make_record("a", "q2", "pass"),
        make_record("a", "q3", "fail"),
        msgspec.structs.replace(make_record("b", "q1", "fail"), facets={"wrong_stage": True}),
    ]
    records[0] = msgspec.structs.replace(records[0], facets={"missing_minor": True})
    results = write_results(tmp_path / "results.jsonl", records)
    assert main(["totals", str(results), "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    by = {r["system"]: r for r in rows}
    assert (by["a"]["facets_missing_minor"], by["a"]["facets_wrong_stage"]) == ("1", "0")
    assert (by["b"]["facets_missing_minor"], by["b"]["facets_wrong_stage"]) == ("0", "1")
    assert by["a"]["score"] == "0.666667"  # six decimals, as the bounds
    assert len(by["a"]["ci_low"].split(".")[1]) <= 6

"""Results as a table for pandas, DuckDB or a spreadsheet: one row per standing record, in CSV or
Parquet (`tabench export`), and the per-system totals as CSV (`tabench totals --csv`).

A row is the standing record of a (system, question) pair (the last written, `outcomes.latest`),
with human decisions applied by the caller: `verdict` is what the pair counts as in the totals (the
human's verdict where there is one), `tool_verdict` what grading said, `decided_by` the reviewer.
Lists are joined with "; " and the facets written as a JSON object, so that every column is a
plain scalar that any reader types the same way. CSV goes through the standard `csv` module
(RFC 4180 quoting: an answer may hold commas, quotes and line breaks), and a text cell that starts
like a spreadsheet formula (`=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading `'`
(`spreadsheet_safe`); Parquet through pyarrow,
imported only here and only for it, from the optional `parquet` extra (`core.extras`).

A file is written whole under a temporary name beside it and then renamed over the target, so an
interrupted export leaves the previous file, never half of one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from ..core.extras import require
from ..core.records import Attempt, JudgeInfo, Record
from ..core.safe_open import replacing
from .costs import Spend, judged_attempts
from .outcomes import BOUND_DECIMALS, latest, outcome
from .totals import Totals

#: The columns of an exported record, in order, with their Parquet types ("string", "int64",
#: "bool", "double"); a column whose value is missing (no cause, no decision, no price) is empty in
#: CSV, null in Parquet.
RECORD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("system", "string"),
    ("question", "string"),
    ("verdict", "string"),
    ("tool_verdict", "string"),
    ("decided_by", "string"),
    ("decision_note", "string"),
    ("cause", "string"),
    ("tier", "string"),
    ("reason", "string"),
    ("answer", "string"),
    ("judge", "string"),
    ("judge_backend", "string"),
    ("judge_model", "string"),
    ("battery", "string"),
    ("prompt_sha256", "string"),
    ("time", "string"),
    ("attempts", "int64"),
    ("judge_calls", "int64"),
    ("cache_hits", "int64"),
    ("format_retries", "int64"),
    ("stern_retries", "int64"),
    ("prompt_tokens", "int64"),
    ("completion_tokens", "int64"),
    ("cached_prompt_tokens", "int64"),
    ("injection_suspect", "bool"),
    ("warnings", "string"),
    ("tolerated", "string"),
    ("facets", "string"),
    ("tags", "string"),
    ("cost_usd", "double"),
)
#: The columns of an export written before `tags` and `cost_usd` were added: such a file is still
#: one tabench wrote, and a new export may replace it.
EARLIER_COLUMNS = tuple(name for name, _ in RECORD_COLUMNS[:-2])
COLUMN_NAMES = tuple(name for name, _ in RECORD_COLUMNS)
#: The first line of an exported CSV (no column's name needs quoting).
CSV_HEADER = (",".join(COLUMN_NAMES) + "\n").encode()
#: The key under which a Parquet file's schema metadata says tabench wrote it.
PARQUET_MARK = b"tabench.export"
FORMATS = ("csv", "parquet")


def standing_rows(standing: Iterable[Record]) -> Iterator[dict[str, Any]]:
    """One row (column -> value) per record of `standing`, each already the standing record of its
    pair (`export_stream` reads them so, one at a time), in their order."""
    for record in standing:
        yield dict(zip(COLUMN_NAMES, row_values(record), strict=True))


def row_values(record: Record) -> list[Any]:
    """The values of `record`'s row, in the order of `RECORD_COLUMNS` (the one home of what each
    column holds: the rows above and `csv_row` below read it)."""
    decision = record.decision
    attempts = record.attempts
    calls = [a for a in attempts if not a.cache_hit and (a.raw is not None or a.error is not None)]
    hits = formats = sterns = 0
    for attempt in attempts:
        hits += attempt.cache_hit
        kind = attempt.kind
        formats += kind == "format"
        sterns += kind == "stern"
    prompt = completion = cached = 0
    for call in calls:
        tokens = call.tokens
        prompt += tokens.prompt
        completion += tokens.completion
        cached += tokens.cached_prompt
    judge = record.judge
    facets = record.facets
    return [
        record.system,
        record.question,
        outcome(record),
        record.verdict,
        decision.reviewer if decision is not None else None,
        decision.note if decision is not None else None,
        record.cause,
        record.tier,
        record.reason,
        record.answer,
        judge.describe(),
        judge.backend,
        judge.model,
        record.battery,
        record.prompt_sha256,
        record.time,
        len(attempts),
        len(calls),
        hits,
        formats,
        sterns,
        prompt,
        completion,
        cached,
        record.injection_suspect,
        "; ".join(record.warnings),
        "; ".join(record.tolerated),
        msgspec.json.encode(dict(sorted(facets.items())) if facets else facets).decode(),
        "; ".join(record.tags),
        _cost(record, judge, calls),
    ]


def record_cost(record: Record) -> float | None:
    """What the judge calls of `record` cost in USD at the price each judge carries (a panel's
    judges' and an audit's calls too; 0 for a T1 pass), None when a billed call has no price."""
    spend = Spend()
    for judge, attempt in judged_attempts(record):
        if not attempt.cache_hit and (attempt.raw is not None or attempt.error is not None):
            spend.add_call(attempt.tokens, judge)
    return spend.cost()


def _cost(record: Record, judge: JudgeInfo, calls: list[Attempt]) -> float | None:
    """`record_cost`, without its sum where it is known at once: a record of one judge asked once
    (nearly every record) with no call made, or a judge that bills nothing (`Spend.add_call`: 0),
    or one whose price is unknown (None)."""
    if record.panel is msgspec.UNSET and record.repeats is msgspec.UNSET and record.audit is msgspec.UNSET:
        if not calls or judge.deterministic:
            return ZERO_COST
        if judge.price is None:
            return None
    return record_cost(record)


#: What a record with nothing billed costs, as `Spend.cost` gives it.
ZERO_COST = Spend().cost()


def system_rows(totals: Totals) -> tuple[list[str], list[dict[str, Any]]]:
    """The per-system totals as rows: every scalar field of `SystemTotals` (by its name in
    `totals --json`), and each field of a mapping of scalars as `NAME_FIELD` (`tokens_prompt`), so a
    field added to the totals appears in the CSV without a change here."""
    facets = _facet_columns(totals)
    more = len(facets) < len(totals.facets)
    rows = []
    for system in totals.systems:
        fields = msgspec.to_builtins(system)
        # Every column's facet, not the first system's only: one a system never showed is 0 for it.
        fields["facets"] = {name: system.facets.get(name, 0) for name in facets}
        row = _flat(fields)
        if more:  # the last column: each system's facets that have none
            rest = {name: n for name, n in sorted(system.facets.items()) if name not in fields["facets"]}
            row[MORE_FACETS] = msgspec.json.encode(rest).decode() if rest else ""
        if row.get("score") is not None:  # rounded as its bounds are (`totals.interval_bound`)
            row["score"] = round(row["score"], BOUND_DECIMALS)
        rows.append(row)
    columns = list(dict.fromkeys(key for row in rows for key in row)) if rows else _system_columns()
    return columns, rows


#: The most facets given a column each in `totals --csv`. Facet names come from replies, so a
#: results file can name a new one in each record: with a column each, 4,000 systems each naming its
#: own would make a table of 4,000 x 4,000 cells (half a GiB for a 2 MiB file). The most frequent
#: 64 get columns; each system's others go in one `MORE_FACETS` cell as a JSON object (as
#: `tabench export` writes a record's facets), so the CSV stays as large as `totals --json`. Its
#: name has no `facets_` prefix, so no facet's column can take it.
MAX_FACET_COLUMNS = 64
MORE_FACETS = "other_facets"


def _facet_columns(totals: Totals) -> list[str]:
    """The facets that get a column: the `MAX_FACET_COLUMNS` most frequent, in name order."""
    counted = sorted(totals.facets.items(), key=lambda item: (-item[1], item[0]))
    return sorted(name for name, _ in counted[:MAX_FACET_COLUMNS])


def _flat(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` with its scalars as they are, a mapping of scalars spread into `NAME_FIELD`
    columns, and lists (and deeper mappings) left out: a CSV cell holds one value."""
    row: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, dict):
            row.update(
                (f"{key}_{inner}", item) for inner, item in value.items() if not isinstance(item, dict | list)
            )
        elif not isinstance(value, list):
            row[key] = value
    return row


def _system_columns() -> list[str]:
    from .totals import SystemTotals

    return list(_flat(msgspec.to_builtins(SystemTotals(system=""))))


def csv_text(columns: Iterable[str], rows: Iterable[dict[str, Any]]) -> str:
    """`rows` as CSV with a header (None as an empty field, booleans as true/false)."""
    return "".join(csv_lines(columns, rows))


def csv_lines(columns: Iterable[str], rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    """`csv_text` one line at a time (each with its line break), the header first."""
    columns = list(columns)
    yield ",".join(_csv_field(column) for column in columns) + "\n"
    cell = _csv_cell
    for row in rows:
        get = row.get
        yield ",".join([cell(get(column)) for column in columns]) + "\n"


#: What makes a CSV field quoted. The `csv` module's QUOTE_MINIMAL leaves a lone carriage return
#: unquoted when rows end with "\n", and most readers end the row there; RFC 4180 quotes it.
_NEEDS_QUOTES = re.compile(r'[,"\r\n]')


def _csv_field(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    return '"' + text.replace('"', '""') + '"' if _NEEDS_QUOTES.search(text) else text


#: The first characters that make a spreadsheet read a cell as a formula (OWASP's list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """`text` with a leading `'` when it starts like a formula, so a spreadsheet shows it, never
    runs it (an answer `=HYPERLINK(...)` stays text). Every CSV tabench writes goes through this."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _csv_cell(value: Any) -> str:
    """One row's field as `_csv_field(_csv_value(value))` writes it: the kinds of value an export
    row holds most (text, None, whole numbers, booleans) without the steps they cannot need (a
    number holds no quote, comma or line break); any other kind takes the steps."""
    kind = type(value)
    if kind is str:
        text = "'" + value if value.startswith(FORMULA_STARTS) else value
        return '"' + text.replace('"', '""') + '"' if _NEEDS_QUOTES.search(text) else text
    if value is None:
        return ""
    if kind is int:
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    return _csv_field(_csv_value(value))


def csv_row(values: list[Any]) -> str:
    """One export row (`row_values`) as `csv_lines` writes it, with its line break. A row whose
    texts need no quoting and start no formula (most rows) is joined as it is; any other takes
    `_csv_cell` for each field."""
    cell = _csv_cell
    if _changes(values):
        return ",".join([cell(value) for value in values]) + "\n"
    plain = [
        v if type(v) is str else "" if v is None else str(v) if type(v) is int else cell(v) for v in values
    ]
    return ",".join(plain) + "\n"


def _changes(values: list[Any]) -> bool:
    """Whether `_csv_cell` changes any text of `values`: one holds a character that makes it quoted,
    or starts like a formula. The texts are looked at joined, each after a NUL (a NUL inside a text
    can only make the answer yes, and then each cell is taken as `_csv_cell` takes it)."""
    joined = "\x00" + "\x00".join([value for value in values if type(value) is str])
    return (
        "," in joined
        or '"' in joined
        or "\n" in joined
        or "\r" in joined
        or any(map(joined.__contains__, _FORMULA_AFTER_NUL))
    )


#: A formula's first characters (`FORMULA_STARTS`) after the NUL `_changes` puts before each text.
_FORMULA_AFTER_NUL = tuple("\x00" + start for start in FORMULA_STARTS)


def _csv_value(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return spreadsheet_safe(value)
    return value


def write_records(records: Iterable[Record], out: str | Path, fmt: str, *, standing: bool = False) -> int:
    """Write the standing records of `records` to `out` in format `fmt` ("csv" or "parquet");
    return the rows written. With `standing`, every record given is already its pair's standing
    one, and CSV is written as they come, in bounded memory. Raises `UsageError` naming the
    `parquet` extra when pyarrow is absent (before anything is written)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    if fmt == "parquet":
        pyarrow = require("pyarrow", extra="parquet", purpose="export --format parquet")
        parquet = require("pyarrow.parquet", extra="parquet", purpose="export --format parquet")
    standing_ones = records if standing else latest(records).values()
    if fmt == "csv":
        written = [0]

        def write_csv(f: Any) -> None:
            f.write(CSV_HEADER)
            for record in standing_ones:
                f.write(csv_row(row_values(record)).encode("utf-8"))
                written[0] += 1

        _replace(out, write_csv)
        return written[0]
    listed = list(standing_rows(standing_ones))
    table = _arrow_table(pyarrow, listed)
    _replace(out, lambda f: parquet.write_table(table, f))
    return len(listed)


def _arrow_table(pyarrow: Any, rows: list[dict[str, Any]]) -> Any:
    types = {
        "string": pyarrow.string(),
        "int64": pyarrow.int64(),
        "bool": pyarrow.bool_(),
        "double": pyarrow.float64(),
    }
    schema = pyarrow.schema(
        [pyarrow.field(name, types[kind]) for name, kind in RECORD_COLUMNS],
        metadata={PARQUET_MARK: b"records"},
    )
    columns = {
        name: [_int64(row[name]) if kind == "int64" else row[name] for row in rows]
        for name, kind in RECORD_COLUMNS
    }
    return pyarrow.table(columns, schema=schema)


def _int64(value: Any) -> Any:
    """`value` when a Parquet int64 holds it, else None (a results file from someone else may say
    a reply took 10**30 tokens: it is no count, and must not stop the export)."""
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        return None
    return value


def _replace(out: str | Path, write: Callable[[Any], Any]) -> None:
    """Write `out` whole through `write(binary_file)` under a temporary name, then rename it."""
    with replacing(out) as f:
        write(f)


def is_export_file(path: Path) -> bool:
    """True for a file `tabench export` wrote: a CSV whose header is the record columns, or a
    Parquet file whose schema carries tabench's mark. Reads only the start (the footer for Parquet)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            if head == b"PAR1":
                return _is_our_parquet(path)
            f.seek(0)
            first = f.readline(1 << 16)
    except OSError:
        return False
    headers = {",".join(name for name, _ in RECORD_COLUMNS) + "\n", ",".join(EARLIER_COLUMNS) + "\n"}
    return first.decode("utf-8", "replace") in headers


def _is_our_parquet(path: Path) -> bool:
    try:
        parquet = require("pyarrow.parquet", extra="parquet", purpose="export --format parquet")
        schema = parquet.read_schema(str(path))
    except Exception:  # not Parquet after all, or pyarrow absent: not a file we may replace
        return False
    return PARQUET_MARK in (schema.metadata or {})

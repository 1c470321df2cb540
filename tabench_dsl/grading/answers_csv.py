"""The records of a CSV answers file, for the answers reader (`answers.AnswerReader`).

The file starts with a header naming the `system`, `question` and `answer` columns, in any order
(other columns are ignored, with one warning); it is read with the standard `csv` module, so RFC
4180 quoting, and a quoted field may span lines. A record is numbered by the line it starts at.
A byte order mark at the start is dropped; bytes that are not UTF-8 are reported at their fault.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..core.jsonl import BadLine, strip_bom, text_fault
from ..core.records import Answer

#: The fields of an answer, in the order a CSV header usually names them.
FIELDS = ("system", "question", "answer")

#: The longest CSV field read (the `csv` module's default, 128 KiB, is below the 256 KiB an answer
#: may be before grading calls it oversized). A quote left open reads at most this much.
CSV_FIELD_LIMIT = 64 << 20


def is_csv(path: str | Path) -> bool:
    """True when `path` is read as CSV (its extension is `.csv`, in any case)."""
    return Path(path).suffix.lower() == ".csv"


class CsvRows:
    """The numbered answers of the CSV file at `path`; a bad record goes to `report(line, message,
    col)`, the ignored columns to `unknown(line, names)`. Iterate once."""

    def __init__(
        self,
        path: str,
        report: Callable[..., None],
        unknown: Callable[[int, Iterable[str]], None],
    ) -> None:
        self.path = path
        self.report = report
        self.unknown = unknown
        #: The number of columns the header names (every record must have as many).
        self.width = 0

    def __iter__(self) -> Iterator[tuple[int, Answer]]:
        if csv.field_size_limit() < CSV_FIELD_LIMIT:
            csv.field_size_limit(CSV_FIELD_LIMIT)
        faults: dict[int, BadLine] = {}  # line number -> its bad text, for the record holding it
        with open(self.path, "rb") as f:
            lines = csv_text_lines(f, faults)
            reader = csv.reader(lines, strict=True)
            end = 0  # the last line the csv reader has read
            columns: dict[str, int] | None = None
            while True:
                start = end + 1
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:
                    self.report(start, f"bad CSV: {exc}; the rest of the file is not read")
                    return
                end = reader.line_num
                fault = next((faults.pop(n) for n in range(start, end + 1) if n in faults), None)
                if not any(field.strip() for field in row):
                    continue  # a blank line
                if fault is not None:
                    self.report(start, f"bad answer: {fault.message}", fault.col)
                    continue
                if columns is None:
                    columns = self._header(start, row)
                    if columns is None:
                        return
                    continue
                yield from self._answer(start, row, columns)

    def _header(self, line: int, row: list[str]) -> dict[str, int] | None:
        names = [name.strip() for name in row]
        missing = [field for field in FIELDS if field not in names]
        if missing:
            self.report(
                line,
                f"bad CSV header: no {', '.join(missing)} column; the first record must name the "
                "system, question and answer columns; the rest of the file is not read",
            )
            return None
        self.unknown(line, [name for name in names if name not in FIELDS])
        self.width = len(names)
        return {field: names.index(field) for field in FIELDS}

    def _answer(self, line: int, row: list[str], columns: dict[str, int]) -> Iterator[tuple[int, Answer]]:
        if len(row) != self.width:
            self.report(line, f"bad answer: {len(row)} field(s) where the header names {self.width}")
            return
        yield line, Answer(*(row[columns[field]] for field in FIELDS))


def csv_text_lines(f, faults: dict[int, BadLine]) -> Iterator[str]:
    """The lines of binary file `f` as text for the csv reader, each keeping its line break; a BOM at
    the start of the file is dropped. A line that is not UTF-8 is passed on with its bad bytes
    replaced (so the reader keeps its place) and its fault noted in `faults` under its number."""
    for number, raw in enumerate(f, start=1):
        if number == 1:
            raw = strip_bom(raw)
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            faults[number] = text_fault(raw) or BadLine("not valid UTF-8")
            yield raw.decode("utf-8", errors="replace")

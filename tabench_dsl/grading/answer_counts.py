"""How many answers an answers file holds, at most: the total `grade`'s progress bar counts to.

Counted without reading the answers: lines for JSONL, records for CSV, samples for an Inspect log.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from .answers_csv import CSV_FIELD_LIMIT, csv_text_lines, is_csv
from .inspect_log import count_log_samples, is_inspect_log


def count_lines(path: str | Path) -> int:
    """Lines in `path`, an upper bound on its answers, for a progress total.

    Counted in 1 MiB chunks: the file is never loaded whole.
    """
    total = 0
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            total += chunk.count(b"\n")
            tail = chunk
    if tail and not tail.endswith(b"\n"):
        total += 1
    return total


def count_answers(path: str | Path | Sequence[str | Path]) -> int:
    """An upper bound on the answers in `path` (or in each of several files), for a progress total:
    its lines for JSONL, its records after the header for CSV (where one answer may span many
    lines), its samples for an Inspect log. Streamed."""
    if not isinstance(path, str | Path):
        return sum(count_answers(each) for each in path)
    if is_inspect_log(path):
        return count_log_samples(path)
    if not is_csv(path):
        return count_lines(path)
    if csv.field_size_limit() < CSV_FIELD_LIMIT:
        csv.field_size_limit(CSV_FIELD_LIMIT)
    records = 0
    with open(path, "rb") as f:
        reader = csv.reader(csv_text_lines(f, {}), strict=True)
        try:
            for row in reader:
                if any(field.strip() for field in row):
                    records += 1
        except csv.Error:
            # The reader stops at the same fault; count the rest as lines (an upper bound still).
            records += sum(1 for _ in f)
    return max(records - 1, 0)  # the header

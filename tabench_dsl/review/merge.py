"""`tabench merge`: the results files of several shards (`grade --shard K/N`) joined into one.

The records of each input are copied as they were written (the line itself, so fields this version
does not know survive), input after input, into a new file. The last record of each pair stands in
the merged file as in any results file, so `totals` of the merge of disjoint shards is `totals` of
one grading of them all. A pair whose standing verdict differs between two inputs (two shards that
graded the same answer and disagree: overlapping shards, a judge that is not deterministic) is a
`Conflict`, named with each input's verdict; the last input's record still stands.

The files beside each input (its decisions, its batch ledger) are joined the same way, line after
line in input order, by `join_lines`: a later decision on a pair wins as it always does, and a ledger
is a list of batches that a `--resume` or `tabench batches` reads whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

import msgspec

from ..core.jsonl import BadLine, decode_line, is_json, numbered_lines
from ..core.safe_open import replacing
from ..store.light_records import light_record_decoder

#: Conflicts kept with their detail (every conflict is counted).
MAX_CONFLICTS_KEPT = 1000


class Conflict(msgspec.Struct, frozen=True):
    """A pair two inputs graded differently: `verdicts` holds (input, its standing verdict) of each
    input that graded it, in input order."""

    system: str
    question: str
    verdicts: list[tuple[str, str]]


class MergeSummary(msgspec.Struct):
    """What a merge did: `records` copied from `inputs` files, `pairs` distinct pairs, `conflicts`
    pairs graded differently (the first `MAX_CONFLICTS_KEPT` of them in `conflicted`), and the
    lines that were not records (`problems`, each `path:line: message`)."""

    inputs: int = 0
    records: int = 0
    pairs: int = 0
    conflicts: int = 0
    conflicted: list[Conflict] = []
    problems: list[str] = []


def merge_results(out: Path, inputs: Iterable[Path]) -> MergeSummary:
    """Write the records of `inputs`, in order, to `out` (replaced whole once written: a merge cut
    short leaves `out` as it was). The caller has checked `out` (`outputs.check_output`)."""
    summary = MergeSummary()
    standing: dict[tuple[str, str], tuple[str, str]] = {}  # pair -> (first input, its verdict)
    conflicts: dict[tuple[str, str], list[tuple[str, str]]] = {}
    out.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out) as sink:
        for path in inputs:
            summary.inputs += 1
            verdicts = _copy_records(path, sink, summary)
            _fold(str(path), verdicts, standing, conflicts)
    summary.pairs = len(standing)
    summary.conflicts = len(conflicts)
    summary.conflicted = [
        Conflict(system, question, verdicts)
        for (system, question), verdicts in list(conflicts.items())[:MAX_CONFLICTS_KEPT]
    ]
    return summary


def _copy_records(path: Path, sink: IO[bytes], summary: MergeSummary) -> dict[tuple[str, str], str]:
    """Copy the record lines of `path` to `sink`; the standing verdict of each of its pairs."""
    verdicts: dict[tuple[str, str], str] = {}
    with open(path, "rb") as f:
        for number, line in numbered_lines(f):
            try:
                record = decode_line(light_record_decoder, line)
            except BadLine as bad:
                where = f"{number}" if bad.col is None else f"{number}:{bad.col}"
                summary.problems.append(f"{path}:{where}: not a result record: {bad.message}")
                continue
            sink.write(line if line.endswith(b"\n") else line + b"\n")
            summary.records += 1
            verdicts[(record.system, record.question)] = record.verdict
    return verdicts


def _fold(
    name: str,
    verdicts: dict[tuple[str, str], str],
    standing: dict[tuple[str, str], tuple[str, str]],
    conflicts: dict[tuple[str, str], list[tuple[str, str]]],
) -> None:
    """Add one input's standing verdicts to those of the inputs before it, noting disagreements."""
    for pair, verdict in verdicts.items():
        seen = standing.setdefault(pair, (name, verdict))
        if pair in conflicts:
            conflicts[pair].append((name, verdict))
        elif seen[1] != verdict:
            conflicts[pair] = [seen, (name, verdict)]


def join_lines(out: Path, sources: Iterable[Path], *, check: Callable[[Path], None] | None = None) -> int:
    """Write the JSON lines of each existing file of `sources`, in order, to `out` (replaced whole);
    a torn last line of a source (cut by a crash, not JSON) is left out. `check(source)` runs first
    on each (a decisions file's own validation). Returns the lines written; with no source present,
    nothing is written and 0 returned."""
    present = [source for source in sources if source.is_file()]
    if not present:
        return 0
    written = 0
    for source in present:
        if check is not None:
            check(source)
    with replacing(out) as sink:
        for source in present:
            with open(source, "rb") as f:
                for _, line in numbered_lines(f):
                    if not line.endswith(b"\n"):
                        if not is_json(line):
                            continue  # a torn last write
                        line += b"\n"
                    sink.write(line)
                    written += 1
    return written

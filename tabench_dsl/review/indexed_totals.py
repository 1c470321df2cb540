"""Totals kept in the results index, so a second `totals` of an unchanged file is instant.

Counting a million records takes tens of seconds however it is done in Python, and the figures of
a file that has not changed are the figures it had. `standing_totals` computes the totals as it
always has (`streamed_totals`; with blind audits `counted_records`, `select_tagged`,
`compute_totals`), keeps them in the index beside the results file (`store.results_index`) under
a name made of everything they depend on, and gives them back while nothing of that changed:

- the results file's bytes (`load_exact`: its size, modification time, inode and hashes of its
  content, all as they were; a file appended to, rewritten, truncated or replaced is counted again);
- the decisions file's whole content (its sha256), `--price`, `--tag`;
- the files of the code that counts (`core`, `store` and `review`, hashed once per process): an upgrade or
  an edit of tabench counts again rather than serve figures an older version computed.

The lines that were not records are kept too, and named again on every call, as a fresh count
names them. A kept value is only ever the JSON of a `Totals` this code computed (signed:
`core.index_key`); one that does not read back as one is computed again.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from ..core.errors import UsageError
from ..core.price import Price
from ..store.results_index import Extent, measure, open_index
from .counted_records import counted_records, decisions_beside
from .outcomes import latest
from .slices import select_tagged
from .streamed_totals import ResultsChanged, streamed_totals
from .totals import Totals, compute_totals

#: Bytes of a decisions file hashed at a time.
_HASH_BLOCK = 1 << 20


class _KeptTotals(msgspec.Struct):
    """What the index keeps: the totals, and each skipped line's problem without the file's name."""

    totals: Totals
    problems: list[str]


def standing_totals(
    results: Path,
    decisions_file: Path | None,
    *,
    price: Price | None = None,
    tags: Sequence[str] | None = None,
    on_problem: Callable[[str], None],
) -> Totals:
    """The totals of `results` as `tabench totals` counts them: the decisions of `decisions_file`
    (when it exists) applied, the standing records of `tags` only (when given), priced at `price`
    over each record's own. Each line that is not a record goes to `on_problem`, as
    `counted_records` words it. Read from the index when it holds them for exactly these inputs."""
    variant = _variant(decisions_file, price, tags)
    index = open_index(results) if variant is not None else None
    prefix = f"{results}:"
    if index is not None and variant is not None:
        kept = _decode(index.load_exact(variant))
        if kept is not None:
            for problem in kept.problems:
                on_problem(prefix + problem)
            return kept.totals
    extent = measure(results)  # before the read: a line appended meanwhile makes it stale
    problems: list[str] = []
    totals = _count(results, decisions_file, price, tags, extent, problems, on_problem)
    named = all(problem.startswith(prefix) for problem in problems)
    if index is not None and variant is not None and extent is not None and named:
        kept_problems = [problem[len(prefix) :] for problem in problems]
        index.store(variant, extent, msgspec.json.encode(_KeptTotals(totals, kept_problems)))
    return totals


def keep_totals(results: Path, decisions_file: Path | None, totals: Totals, *, size: int) -> None:
    """Keep `totals`, the totals of `results` counted another way (`run_totals`: as a grading wrote
    the file), in its index as `standing_totals` keeps what it counts, so the next `totals` of the
    unchanged file reads them back. The file holds no line that is not a record, and was `size`
    bytes when they were counted: a file that has grown since (another grading, once this one let
    go of it) is not the file they count, and nothing is kept."""
    variant = _variant(decisions_file, None, None)
    index = open_index(results) if variant is not None else None
    extent = measure(results)
    if index is not None and variant is not None and extent is not None and extent.size == extent.end == size:
        index.store(variant, extent, msgspec.json.encode(_KeptTotals(totals, [])))


def _count(
    results: Path,
    decisions_file: Path | None,
    price: Price | None,
    tags: Sequence[str] | None,
    extent: Extent | None,
    problems: list[str],
    on_problem: Callable[[str], None],
) -> Totals:
    """The totals counted from the file, each bad line's problem onto `problems` and then to
    `on_problem`. Streamed (`streamed_totals`: memory bounded by the pairs, not the records) unless
    a blind audit is among the decisions: it needs the records whole (`counted_records`), held in
    a list as they always were."""
    decisions = decisions_beside(decisions_file)
    if not any(decision.is_audit for decision in decisions):
        try:
            totals = streamed_totals(
                results, decisions, price=price, extent=extent, on_problem=problems.append, tags=tags
            )
        except ResultsChanged:  # truncated or rewritten while it was read: counted again, whole
            problems.clear()
        except UsageError:  # an unknown --tag, after the lines that were not records are named
            for problem in problems:
                on_problem(problem)
            raise
        else:
            for problem in problems:
                on_problem(problem)
            return totals
    records = counted_records(results, decisions_file, on_problem=problems.append)
    for problem in problems:  # named before an unknown --tag stops the count, as they always were
        on_problem(problem)
    if tags:  # the standing record of a pair says which slice it is in
        records = select_tagged(latest(records).values(), tags)
    return compute_totals(records, price=price)


def _decode(body: bytes | None) -> _KeptTotals | None:
    if body is None:
        return None
    try:
        return msgspec.json.decode(body, type=_KeptTotals)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _variant(decisions_file: Path | None, price: Price | None, tags: Sequence[str] | None) -> str | None:
    """The index's name for the totals of these inputs; None when the decisions cannot be read
    (then nothing is kept: the count reports what is wrong with them, as it always has)."""
    decisions = decisions_hash(decisions_file)
    if decisions is None:
        return None
    inputs = ["totals", code_hash(), decisions, msgspec.to_builtins(price), list(tags or ())]
    return "totals:" + hashlib.sha256(msgspec.json.encode(inputs)).hexdigest()


def decisions_hash(path: Path | None) -> str | None:
    """sha256 of the decisions file's content; "" when there is none; None when unreadable."""
    if path is None or not path.exists():
        return ""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while block := f.read(_HASH_BLOCK):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


@functools.cache
def code_hash() -> str:
    """sha256 of the files of `core`, `store` and `review` (their source, the report's templates),
    where every figure and page is made."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for folder in ("core", "store", "review"):
        for source in sorted((package / folder).rglob("*")):
            if source.is_file() and "__pycache__" not in source.parts:
                digest.update(source.relative_to(package).as_posix().encode() + b"\0")
                digest.update(source.read_bytes())
    return digest.hexdigest()

"""A diff of two results files kept in the first one's index, for the next `diff A B` of the same files.

`diff A B` streams both files twice (outcomes, then the reasons of the flips: `diff_files`); at a
million records each that is still many seconds. The diff of two files that have not changed is
the diff they had, so `kept_diff` gives back the `Diff` computed earlier when all it depends on is
as it was: A's bytes (`results_index.load_exact`), B's bytes (B's `Extent` is part of the value's
name), both decisions files' content, the two names as given, and the source of the code that
counts (`index_names.code_hash`). Only a diff of two files without bad lines or stale decisions
is kept (`keep_diff`), so a kept one has no warning to repeat.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from ..store.decisions import decisions_path
from ..store.results_index import Extent, measure, open_index
from .diff import Diff
from .index_names import kept_name


def _variant(a: Path, b: Path) -> tuple[str, Extent] | None:
    """The index's name for the diff of `a` and `b` as they are now, and A's extent; None when a
    file cannot be read (then nothing is kept or used)."""
    a_extent, b_extent = measure(a), measure(b)
    if a_extent is None or b_extent is None:
        return None
    decisions = [decisions_path(path) for path in (a, b)]
    name = kept_name("diff", decisions, str(a), str(b), msgspec.to_builtins(b_extent))
    return None if name is None else (name, a_extent)


def kept_diff(a: Path, b: Path) -> Diff | None:
    """The diff of `a` and `b` kept in A's index for the files as they are now, else None."""
    if not (a.is_file() and b.is_file()):
        return None
    named = _variant(a, b)
    index = open_index(a) if named is not None else None
    if index is None or named is None:
        return None
    body = index.load_exact(named[0])
    if body is None:
        return None
    try:
        return msgspec.json.decode(body, type=Diff)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def keep_diff(a: Path, b: Path, diff: Diff, *, before: tuple[Extent | None, Extent | None]) -> None:
    """Keep `diff` (computed from `a` and `b` with no bad line and no stale decision) in A's index.
    `before` is both files' `measure` taken before they were read: a file that changed while it
    was read is not kept for."""
    named = _variant(a, b)
    if named is None or before != (named[1], measure(b)):
        return
    index = open_index(a)
    if index is not None:
        index.store(named[0], named[1], msgspec.json.encode(diff))

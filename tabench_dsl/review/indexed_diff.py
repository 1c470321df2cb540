"""A diff of two results files kept in the first one's index, for the next `diff A B` of the same files.

`diff A B` streams both files twice (outcomes, then the reasons of the flips: `diff_files`); at a
million records each that is still many seconds. The diff of two files that have not changed is
the diff they had, so `kept_diff` gives back the `Diff` computed earlier when all it depends on is
as it was: A's bytes (`results_index.load_exact`), B's bytes (B's `Extent` is part of the value's
name), both decisions files' content, the two names as given, and the source of the code that
counts (`index_names.code_hash`). Only a diff of two files without bad lines or stale decisions
is kept (`keep_diff`), so a kept one has no warning to repeat.

Two values are kept: the whole diff (for `--json`) and what the terminal shows of it
(`diff.ShownDiff`, named also by how many flips and pairs it shows). At ten million records the
whole diff holds about a million flips with their reasons, a hundred megabytes to read, check and
decode; what the terminal shows is a few kilobytes.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from ..store.decisions import decisions_path
from ..store.results_index import Extent, measure, open_index
from .diff import Diff, ShownDiff, shown_diff
from .index_names import kept_name

#: How many flips, and pairs of each side only, the terminal shows: (flips, pairs).
Shown = tuple[int, int]
#: The kinds of the two values kept (`index_names.kept_name`): the whole diff, the terminal's part.
KIND, SHOWN_KIND = "diff", "diff-shown"


def _variant(a: Path, b: Path, shown: Shown | None) -> tuple[str, Extent] | None:
    """The index's name for the diff of `a` and `b` as they are now (with `shown`, for what the
    terminal shows of it), and A's extent; None when a file cannot be read (then nothing is kept
    or used)."""
    a_extent, b_extent = measure(a), measure(b)
    if a_extent is None or b_extent is None:
        return None
    decisions = [decisions_path(path) for path in (a, b)]
    inputs = (str(a), str(b), msgspec.to_builtins(b_extent))
    name = (
        kept_name(KIND, decisions, *inputs)
        if shown is None
        else kept_name(SHOWN_KIND, decisions, *inputs, *shown)
    )
    return None if name is None else (name, a_extent)


def _kept(a: Path, b: Path, shown: Shown | None) -> bytes | None:
    if not (a.is_file() and b.is_file()):
        return None
    named = _variant(a, b, shown)
    index = open_index(a) if named is not None else None
    if index is None or named is None:
        return None
    return index.load_at(named[0], named[1])


def kept_diff(a: Path, b: Path) -> Diff | None:
    """The diff of `a` and `b` kept in A's index for the files as they are now, else None."""
    body = _kept(a, b, None)
    try:
        return None if body is None else msgspec.json.decode(body, type=Diff)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def kept_shown_diff(a: Path, b: Path, shown: Shown) -> ShownDiff | None:
    """What the terminal shows (`shown`: flips, pairs of each side only) of the diff of `a` and `b`
    kept in A's index for the files as they are now, else None."""
    body = _kept(a, b, shown)
    try:
        return None if body is None else msgspec.json.decode(body, type=ShownDiff)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def keep_diff(
    a: Path, b: Path, diff: Diff, *, before: tuple[Extent | None, Extent | None], shown: Shown
) -> None:
    """Keep `diff` (computed from `a` and `b` with no bad line and no stale decision) in A's index,
    and what the terminal shows of it (`shown`), in one transaction (two when the whole diff
    alone fills one of `store_many`'s). `before` is both files' `measure` taken before they were
    read: a file that changed while it was read is not kept for."""
    named = _variant(a, b, None)
    if named is None or before != (named[1], measure(b)):
        return
    index = open_index(a)
    if index is None:
        return
    values = [(named[0], msgspec.json.encode(diff))]
    terminal = _variant(a, b, shown)
    if terminal is not None and terminal[1] == named[1]:
        flips, only_in = shown
        page = shown_diff(diff, shown_flips=flips, shown_only_in=only_in)
        values.append((terminal[0], msgspec.json.encode(page)))
    index.store_many(named[1], lambda: values, replacing=(f"{KIND}:", f"{SHOWN_KIND}:"))

"""What a value kept in the results index is named by, beside the inputs of the command that
computed it: the decisions file it applied (`decisions_hash`) and the code that computed it
(`code_hash`), so an upgrade or an edit of tabench computes again rather than serve figures an
older version made. Every kept value of the review side (totals, a report, a diff, the viewer's
columns) is named with these, by `kept_name`."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path

import msgspec

#: Bytes of a decisions file hashed at a time.
_HASH_BLOCK = 1 << 20


def kept_name(kind: str, decisions_files: Sequence[Path | None], *inputs: object) -> str | None:
    """The index's name for the value `kind` computed from `inputs` (JSON-able) with the decisions
    of `decisions_files` applied, by this code; None when one of those files cannot be read (then
    nothing is kept or used: the command reports what is wrong with it)."""
    decisions = [decisions_hash(path) for path in decisions_files]
    if None in decisions:
        return None
    named = msgspec.json.encode([kind, code_hash(), *decisions, *inputs])
    return f"{kind}:" + hashlib.sha256(named).hexdigest()


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

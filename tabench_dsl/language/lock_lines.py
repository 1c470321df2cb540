"""What changed in a drifted prompt, as far as a lock can tell: its lines, by short digest.

A lock pins each SYSTEM prompt by its sha256, which says that a prompt drifted but not where. So the
lock also keeps, per question, a short digest of each line of the prompt (`line_digests`: 8 hex
digits of the line's sha256, space-separated, one string per question so a lock stays one line per
question). `--check` then shows the lines of the prompt as it compiles now that the locked prompt did
not have, and counts the locked lines that are gone (`changed_lines`), without the lock holding any
prompt text. A lock written before lines were kept has none: `--check` says so, and `--lock` again
adds them.
"""

from __future__ import annotations

import hashlib

#: Hex digits kept of each line's sha256: enough to tell a prompt's lines apart.
LINE_DIGEST_HEX = 8


def _digest(line: str) -> str:
    return hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:LINE_DIGEST_HEX]


def line_digests(text: str) -> str:
    """The short digest of every line of `text`, in order, space-separated."""
    return " ".join(_digest(line) for line in text.split("\n"))


def changed_lines(now: str, locked: str) -> tuple[list[str], int]:
    """The lines of `now` whose digest `locked` (`line_digests` of the locked prompt) lacks, in
    order, and how many locked lines `now` no longer has (counted with repeats)."""
    remaining: dict[str, int] = {}
    for digest in locked.split():
        remaining[digest] = remaining.get(digest, 0) + 1
    added: list[str] = []
    for line in now.split("\n"):
        digest = _digest(line)
        if remaining.get(digest, 0) > 0:
            remaining[digest] -= 1
        else:
            added.append(line)
    return added, sum(remaining.values())

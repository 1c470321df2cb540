"""`grade --shard K/N`: one grading split over N machines, each grading the answers of its shard.

An answer's shard is where its pair falls under the hash the T1 audit already uses
(`audit_share`: the sha256 of system, NUL, question): shard K of N holds the pairs whose
share lies in [(K-1)/N, K/N). The hash depends on the pair alone, so a shard holds the same answers
on every run and every machine, whatever the answers file's order or the other flags (`--resume`,
the reply cache, `--batch`, `--workers` see only the shard's answers). K counts from 1, as a SLURM
array's `--array=1-N` does; `tabench merge` joins the shards' results files afterwards.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator

import msgspec

from ..core.errors import UsageError
from ..core.records import Answer

_SHARD = re.compile(r"(\d{1,9})/(\d{1,9})")


def audit_share(system: str, question: str) -> float:
    """Where the pair falls in [0, 1): the first 8 bytes of the sha256 of `system`, NUL, `question`,
    as a fraction. `--t1-audit F` audits the T1 passes whose share is below F, so a rerun (or
    another process of `--workers`) picks the same ones, and a larger F keeps the ones a smaller
    one picked."""
    digest = hashlib.sha256(f"{system}\0{question}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class Shard(msgspec.Struct, frozen=True):
    """Shard `index` (from 1) of `count`."""

    index: int
    count: int

    def holds(self, system: str, question: str) -> bool:
        """Whether the pair (system, question) belongs to this shard."""
        # min(): a share within 2**-53 of 1 rounds to 1.0 as a float; it belongs to the last shard.
        return min(int(audit_share(system, question) * self.count), self.count - 1) == self.index - 1

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """`K/N` -> `Shard(K, N)`; `UsageError` unless 1 <= K <= N."""
    match = _SHARD.fullmatch(text.strip())
    if match is None:
        raise UsageError(f"--shard {text!r}: expected K/N, e.g. 1/4 (shard 1 of 4)")
    index, count = int(match[1]), int(match[2])
    if not 1 <= index <= count:
        raise UsageError(f"--shard {text}: K must be from 1 to N ({count})")
    return Shard(index, count)


def in_shard(answers: Iterable[Answer], shard: Shard | None) -> Iterator[Answer]:
    """The answers of `answers` that belong to `shard` (all of them for None), in their order."""
    if shard is None:
        yield from answers
        return
    for answer in answers:
        if shard.holds(answer.system, answer.question):
            yield answer

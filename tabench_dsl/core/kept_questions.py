"""A compiled battery's questions read from a kept entry one at a time, as a run first needs each.

A battery of 200,000 questions holds 200,000 SYSTEM prompts (about 900 MB of text for the shipped
scorer), while `grade --resume` with a few answers left to grade needs the prompts of those few
only, and the ids of all. `KeptQuestions` is the battery's mapping id -> `CompiledQuestion` over a
checked kept entry (`kept_entries.EntryFile`) that holds each question encoded on its own. The ids
and where each question's bytes are come in memory; a question is decoded from the entry the first
time it is asked for (then kept, as a run asks for the same question again), and only once its
bytes give the digest the entry's signed head keeps for it, so a file changed in place since its
signature was checked can never give a question but its own. Asking whether a question is there,
iterating the ids or counting them decodes nothing.

It reads as any mapping of the questions (`in`, `len`, iteration in the battery's order, `[]`,
and, by `Mapping`'s own methods, `get`, `items`, `values` and `==` with a dict); `items()` and
`values()` decode every question, as they must.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping

import msgspec

from .compiled import CompiledQuestion
from .errors import UsageError
from .kept_entries import PART_DIGEST_BYTES, EntryFile, part_digest

_decoder = msgspec.msgpack.Decoder(CompiledQuestion)


class KeptQuestions(Mapping[str, CompiledQuestion]):
    """The questions whose ids are `ids` (in the battery's order), question `i` encoded in `entry`'s
    body from `ends[i - 1]` (from `start` for the first) to `ends[i]`, its bytes' `kept_entries.part_digest`
    the `i`th of `digests`."""

    def __init__(self, entry: EntryFile, ids: list[str], start: int, ends: array, digests: bytes) -> None:
        if not len(ids) == len(ends) == len(digests) // PART_DIGEST_BYTES or len(digests) % PART_DIGEST_BYTES:
            raise ValueError("one end and one digest per question")
        self._entry = entry
        self._ids = ids
        self._digests = digests
        self._start = start
        self._ends = ends
        self._places = dict(zip(ids, range(len(ids)), strict=True))
        self._decoded: dict[str, CompiledQuestion] = {}

    def __getitem__(self, qid: str) -> CompiledQuestion:
        question = self._decoded.get(qid)
        if question is None:
            place = self._places[qid]  # KeyError for an id the battery lacks
            first = self._ends[place - 1] if place else self._start
            body = self._entry.read(first, self._ends[place] - first)
            kept = self._digests[place * PART_DIGEST_BYTES : (place + 1) * PART_DIGEST_BYTES]
            if part_digest(body) != kept:
                raise UsageError(
                    "tabench's kept compile of the battery changed while in use (its cache file was "
                    "written in place): run the command again"
                )
            question = _decoder.decode(body)
            self._decoded[qid] = question
        return question

    def __contains__(self, qid: object) -> bool:
        return qid in self._places

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

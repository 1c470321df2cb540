"""The standing records of a results file, read from it when asked for: the list the viewer pages.

`RecordsOnDisk` is a sequence of `Record`s in the columns' order (`columns.Table`) that decodes a
record from its line (the offset and length the columns keep) each time one is asked for, so
only a page's rows and a detail are ever whole in memory. The records a human decision or audit
names (a handful) are held decided (`overlay`), and a decision made in the viewer joins them.

The results file is opened once and kept open: appended lines never move the ones the columns
point at, and a file replaced meanwhile is still read as the columns saw it. A line that no
longer holds the record the columns expect (a file rewritten in place) is an error naming the
file, never another record shown in its place.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from ...core.errors import UsageError
from ...core.jsonl import strip_bom
from ...core.records import Record, record_decoder
from ...store.results_index import Extent
from .columns import Table

#: Bytes the results file is read ahead: a search reads lines in file order, mostly from memory.
_BUFFER = 1 << 20


class _Texts(msgspec.Struct):
    """The two texts the list's search `q` reads of a record."""

    answer: str = ""
    reason: str = ""


_texts_decoder = msgspec.json.Decoder(_Texts)


class RecordsOnDisk:
    """The records at the columns' positions, decoded from the results file on demand."""

    def __init__(self, path: Path, table: Table, overlay: dict[tuple[str, str], Record]) -> None:
        self.path = path
        self.table = table
        #: Records held whole: those a decision or an audit names, with it applied.
        self.overlay = overlay
        self._file = open(path, "rb", buffering=_BUFFER)  # noqa: SIM115 (read for the viewer's life)

    def __len__(self) -> int:
        return len(self.table)

    @property
    def extent(self) -> Extent | None:
        """The results file as the columns read it (`totals_of.PlacedRecords`)."""
        return self.table.extent

    def key(self, position: int) -> tuple[str, str]:
        """The (system, question) of the record at `position`."""
        columns, table = self.table.columns, self.table
        return table.table("system")[columns["system"][position]], table.table("question")[
            columns["question"][position]
        ]

    def __getitem__(self, position: int) -> Record:
        if not 0 <= position < len(self.table):
            raise IndexError(position)
        key = self.key(position)
        held = self.overlay.get(key)
        if held is not None:
            return held
        record = self._decode(position, record_decoder)
        if record.key != key:
            raise self._changed(position)
        return record

    def __iter__(self) -> Iterator[Record]:
        for position in range(len(self.table)):
            yield self[position]

    def __setitem__(self, position: int, record: Record) -> None:
        """Hold `record` (decided or audited in the viewer) in place of the line's."""
        self.overlay[self.key(position)] = record
        self.table.set_code("human", position, "" if record.decision is None else record.decision.verdict)

    def matching_text(self, positions: list[int], needle: str) -> list[int]:
        """The `positions` whose answer or reason holds `needle` (casefolded), as the in-memory
        index searches `answer + "\\n" + reason`: each line read again, in file order."""
        offsets = self.table.offsets.whole()
        hits = set()
        for position in sorted(positions, key=offsets.__getitem__):
            texts = self._decode(position, _texts_decoder)
            if needle in f"{texts.answer}\n{texts.reason}".casefold():
                hits.add(position)
        return [position for position in positions if position in hits]

    def each_from_file(
        self, decode: Callable[[bytes], Record], start: int = 0, stop: int | None = None
    ) -> Iterator[Record]:
        """Every record at the columns' positions (from `start` to `stop`, None: the last), in
        their order, as `decode` reads its line, never one held (`overlay`): the file as the
        columns saw it. Each line is read on its own (`pread`), so the order costs no read-ahead
        thrown away."""
        table = self.table
        offsets, lengths = table.offsets.whole(), table.lengths.whole()
        systems, questions = table.columns["system"].whole(), table.columns["question"].whole()
        system_names, question_names = table.table("system"), table.table("question")
        with open(self.path, "rb", buffering=0) as f:
            fd = f.fileno()
            for position in range(start, len(table) if stop is None else stop):
                record = self._decoded(position, os.pread(fd, lengths[position], offsets[position]), decode)
                if record.key != (system_names[systems[position]], question_names[questions[position]]):
                    raise self._changed(position)
                yield record

    def _decode(self, position: int, decoder):
        self._file.seek(self.table.offsets[position])
        return self._decoded(position, self._file.read(self.table.lengths[position]), decoder.decode)

    def _decoded(self, position: int, line: bytes, decode: Callable[[bytes], Any]) -> Any:
        try:
            return decode(line)
        except (msgspec.DecodeError, RecursionError):
            pass
        try:
            return decode(strip_bom(line))  # a byte order mark before the first line
        except (msgspec.DecodeError, RecursionError):
            raise self._changed(position) from None

    def _changed(self, position: int) -> UsageError:
        system, question = self.key(position)
        return UsageError(
            f"{self.path}: the line of {system!r}/{question!r} changed since the viewer read the file "
            "(was it rewritten?): restart `tabench view`"
        )


class Positions:
    """(system, question) -> the position of its record, found by bisection: the columns are in
    (system, question) order and their codes are ranks among the sorted names, so the system
    column is sorted, and within one system's run so is the question column; a name's code is
    found by bisection of its sorted table too (no map of 200,000 question names built at start)."""

    def __init__(self, table: Table) -> None:
        self.systems = table.table("system")
        self.questions = table.table("question")
        self.table = table

    def __getitem__(self, key: tuple[str, str]) -> int:
        system, question = _code(self.systems, key[0]), _code(self.questions, key[1])
        if system is None or question is None:
            raise KeyError(key)
        systems, questions = self.table.columns["system"], self.table.columns["question"]
        first = bisect_left(systems, system)
        last = bisect_left(systems, system + 1, first)
        position = bisect_left(questions, question, first, last)
        if position == last or questions[position] != question:
            raise KeyError(key)
        return position

    def get(self, key: tuple[str, str]) -> int | None:
        try:
            return self[key]
        except KeyError:
            return None


def _code(names: list[str], name: str) -> int | None:
    """The code of `name` in the sorted table `names`, None when it is not there."""
    code = bisect_left(names, name)
    return code if code < len(names) and names[code] == name else None

"""The standing records of a results file as integer columns: what the viewer filters and pages.

A million `Record`s take gigabytes; the list filters read only a few small values of each. So the
viewer keeps, per standing record, in the order the list shows them ((system, question) order):
one small integer code per filtered field (each into a table of the distinct values it takes;
the facets seen and the tags are coded as whole sets), and the byte offset and length of the
record's line in the results file, from which a page's rows and a detail are decoded again. The
columns are `array`s (4 or 8 bytes a value), so a filter is one pass over integers; a later view
loads them from the index a page at a time, as they are asked for (`column_pages`).

`column_store` builds them from the file and keeps them in the index beside it; this module is
what they are and the questions the viewer asks of them.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence

import msgspec

from ...store.results_index import Extent
from .column_pages import Column

#: The coded fields, in the order `Columns.names` and `Columns.sets` hold their tables.
FIELDS: tuple[str, ...] = (
    "system",
    "question",
    "verdict",
    "tier",
    "cause",
    "human",
    "audit",
    "facets",
    "tags",
)
#: The last fields of `FIELDS`, whose values are sets (coded whole, each set once in its table).
SET_FIELDS = 2
#: A code's array type: 4 bytes (`I`); an offset's: 8 bytes (`Q`).
CODE_TYPE, OFFSET_TYPE = "I", "Q"


class Columns(msgspec.Struct, array_like=True):
    """What the index keeps of the columns beside the codes themselves (msgpack): the names each
    code stands for and how many records there are. Each column is kept in pages of its own, its
    array's bytes (`column_store`), so no value is ever a copy of the whole.

    `names[f]` is the table of field `FIELDS[f]` for the fields of one string each ("" for none:
    no cause, no human decision, no T1 audit); `sets` the tables of the last two, `facets` (those
    seen) and `tags`: their distinct sets, each as a list. `problems` are the lines that were not
    records, each as `line: message` (without the file's name). `awaiting`: how many records are
    adjudicated and undecided (None: not counted yet), so a later view counts no column for it.
    """

    names: list[list[str]]
    sets: list[list[list[str]]]
    count: int
    problems: list[str]
    awaiting: int | None = None


class Table:
    """The columns in use: one `Column` per field (`columns[f]`: field f's code of each record),
    the names behind its codes, and the offset and length of each record's line. `extent` is
    the results file the columns were read from (`results_index.Extent`), when known. Every name
    of a table is some record's until the records are narrowed (`kept`) or one is set (`set_code`),
    which is how a later view lists the filters' choices without reading a column."""

    def __init__(
        self,
        head: Columns,
        columns: Mapping[str, array | Column],
        offsets: array | Column,
        lengths: array | Column,
        extent: Extent | None = None,
    ) -> None:
        self.names: list[list] = [list(names) for names in head.names] + [list(s) for s in head.sets]
        self.columns = {field: _column(values) for field, values in columns.items()}
        self.offsets = _column(offsets)
        self.lengths = _column(lengths)
        self.problems = head.problems
        self.extent = extent
        #: The fields whose tables may name values no record has any more.
        self._changed: set[str] = set()
        self.awaiting = self.count_awaiting() if head.awaiting is None else head.awaiting

    def __len__(self) -> int:
        return len(self.offsets)

    def valid(self, count: int) -> bool:
        """Whether every column has the `count` values the head names (else the columns are not
        used). The codes themselves are not walked (ten million of each would cost seconds at
        every start): each page is signed together with the hash of the code that wrote it
        (`column_store`), which checks each page's places against the file as it loads it."""
        if len(self.names) != len(FIELDS) or len(self.offsets) != count or len(self.lengths) != count:
            return False
        return all(len(column) == count for column in self.columns.values())

    def table(self, field: str) -> list:
        """The names `field`'s codes stand for."""
        return self.names[FIELDS.index(field)]

    def code_of(self, field: str, value: object) -> int:
        """The code of `value` in `field`'s table, added to it when new (a decision's verdict)."""
        names = self.table(field)
        if value not in names:
            names.append(value)
        return names.index(value)

    def set_code(self, field: str, position: int, value: object) -> None:
        """Give the record at `position` the value `value` of `field` (a person's decision), the
        count of the answers awaiting one kept up."""
        adjudicated = self.table("verdict")[self.columns["verdict"][position]] == "adjudicate"
        before = self.columns["human"][position] == self.code_of("human", "")
        self.columns[field][position] = self.code_of(field, value)
        self._changed.add(field)
        after = self.columns["human"][position] == self.code_of("human", "")
        self.awaiting += adjudicated * (after - before)

    def count_awaiting(self) -> int:
        """How many records are adjudicated and not decided by a person: the adjudicated ones
        counted (`array.count`, no list of them made), less those decided (each found by
        `array.index`)."""
        verdicts, humans = self.columns["verdict"].whole(), self.columns["human"].whole()
        adjudicate = self.codes_where("verdict", lambda verdict: verdict == "adjudicate")
        waiting = sum(verdicts.count(code) for code in adjudicate)
        for code in self.codes_where("human", lambda human: human != "") if waiting else ():
            waiting -= sum(verdicts[at] in adjudicate for at in _places(humans, code))
        return waiting

    def used(self, field: str) -> list:
        """The values of `field` some record has, in table order: its whole table while every
        name in it is some record's; else, where every code fits in a byte (a table of up to 256
        names), the codes' low bytes are searched for each code in turn (a search in C over a
        quarter of the column's bytes), or gathered in a set."""
        names = self.table(field)
        if field not in self._changed:
            return list(names)
        column = self.columns[field].whole()
        if len(names) <= 256 and column.itemsize == 4 and sys.byteorder == "little":
            low = column.tobytes()[::4]
            return [name for code, name in enumerate(names) if bytes((code,)) in low]
        return [names[code] for code in sorted(set(column))]

    def codes_where(self, field: str, wanted) -> set[int]:
        """The codes of `field` whose value passes the test `wanted`."""
        return {code for code, name in enumerate(self.table(field)) if wanted(name)}

    def narrowed(self, positions: Sequence[int], field: str, codes: set[int]) -> list[int]:
        """The `positions` whose `field` has one of `codes`, in their order. Of every position,
        each code's are found by a search in C (`array.index`), not a Python test of each."""
        if not codes:
            return []
        column = self.columns[field].whole()
        if positions == range(len(column)):
            found = [at for code in codes for at in _places(column, code)]
            return found if len(codes) == 1 else sorted(found)
        if len(codes) == 1:
            (only,) = codes
            return [i for i in positions if column[i] == only]
        return [i for i in positions if column[i] in codes]

    def kept(self, positions: Iterable[int]) -> None:
        """Keep only the records at `positions` (in that order): the slice `--tag` shows."""
        chosen = list(positions)
        self.columns = {
            name: Column(array(CODE_TYPE, map(col.whole().__getitem__, chosen)))
            for name, col in self.columns.items()
        }
        self.offsets = Column(array(OFFSET_TYPE, map(self.offsets.whole().__getitem__, chosen)))
        self.lengths = Column(array(CODE_TYPE, map(self.lengths.whole().__getitem__, chosen)))
        self._changed.update(FIELDS)
        self.awaiting = self.count_awaiting()


def _places(column: array, code: int) -> Iterator[int]:
    """The positions in `column` that hold `code`, in order."""
    at = -1
    while True:
        try:
            at = column.index(code, at + 1)
        except ValueError:
            return
        yield at


def _column(values: array | Column) -> Column:
    return values if isinstance(values, Column) else Column(values)


def array_of(kind: str, data: bytes) -> array:
    """The `array` of type `kind` whose bytes `data` are (a trailing part of a value dropped)."""
    values = array(kind)
    values.frombytes(memoryview(data)[: len(data) - len(data) % values.itemsize])
    return values

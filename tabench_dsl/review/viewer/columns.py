"""The standing records of a results file as integer columns: what the viewer filters and pages.

A million `Record`s take gigabytes; the list filters read only a few small values of each. So the
viewer keeps, per standing record, in the order the list shows them ((system, question) order):
one small integer code per filtered field (each into a table of the distinct values it takes;
the facets seen and the tags are coded as whole sets), and the byte offset and length of the
record's line in the results file, from which a page's rows and a detail are decoded again. The
columns are `array`s (4 or 8 bytes a value), so a filter is one pass over integers.

`column_store` builds them from the file and keeps them in the index beside it; this module is
what they are and the questions the viewer asks of them.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Sequence

import msgspec

from ...store.results_index import Extent

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
    code stands for and how many records there are. Each column is kept as its own value, its
    array's bytes (`column_store`), so no value is ever a copy of the whole.

    `names[f]` is the table of field `FIELDS[f]` for the fields of one string each ("" for none:
    no cause, no human decision, no T1 audit); `sets` the tables of the last two, `facets` (those
    seen) and `tags`: their distinct sets, each as a list. `problems` are the lines that were not
    records, each as `line: message` (without the file's name).
    """

    names: list[list[str]]
    sets: list[list[list[str]]]
    count: int
    problems: list[str]


class Table:
    """The columns in use: one `array` per field (`columns[f]`: field f's code of each record),
    the names behind its codes, and the offset and length of each record's line. `extent` is
    the results file the columns were read from (`results_index.Extent`), when known."""

    def __init__(
        self,
        head: Columns,
        columns: dict[str, array],
        offsets: array,
        lengths: array,
        extent: Extent | None = None,
    ) -> None:
        self.names: list[list] = [list(names) for names in head.names] + [list(s) for s in head.sets]
        self.columns = columns
        self.offsets = offsets
        self.lengths = lengths
        self.problems = head.problems
        self.extent = extent

    def __len__(self) -> int:
        return len(self.offsets)

    def valid(self, count: int, end: int) -> bool:
        """Whether every column has the `count` values the head names and every line lies within
        the first `end` bytes of the file (else the columns are not used). The codes themselves
        are not walked (ten million of each would cost seconds at every start): each value is
        signed together with the hash of the code that wrote it (`column_store`), so no other
        codes are ever read."""
        if len(self.names) != len(FIELDS) or len(self.offsets) != count or len(self.lengths) != count:
            return False
        if any(len(column) != count for column in self.columns.values()):
            return False
        # Each line starts and ends within the file (`RecordsOnDisk` checks each line it reads is
        # the record it expects).
        return not count or (max(self.offsets) < end and max(self.lengths) <= end)

    def table(self, field: str) -> list:
        """The names `field`'s codes stand for."""
        return self.names[FIELDS.index(field)]

    def code_of(self, field: str, value: object) -> int:
        """The code of `value` in `field`'s table, added to it when new (a decision's verdict)."""
        names = self.table(field)
        if value not in names:
            names.append(value)
        return names.index(value)

    def used(self, field: str) -> list:
        """The values of `field` some record has, in table order. Where every code fits in a byte
        (a table of up to 256 names), the codes' low bytes are searched for each code in turn (a
        search in C over a quarter of the column's bytes), else gathered in a set."""
        names, column = self.table(field), self.columns[field]
        if len(names) <= 256 and column.itemsize == 4 and sys.byteorder == "little":
            low = column.tobytes()[::4]
            return [name for code, name in enumerate(names) if bytes((code,)) in low]
        return [names[code] for code in sorted(set(column))]

    def codes_where(self, field: str, wanted) -> set[int]:
        """The codes of `field` whose value passes the test `wanted`."""
        return {code for code, name in enumerate(self.table(field)) if wanted(name)}

    def narrowed(self, positions: Sequence[int], field: str, codes: set[int]) -> list[int]:
        """The `positions` whose `field` has one of `codes`, in their order."""
        column = self.columns[field]
        if len(codes) == 1:
            (only,) = codes
            return [i for i in positions if column[i] == only]
        return [i for i in positions if column[i] in codes]

    def kept(self, positions: Iterable[int]) -> None:
        """Keep only the records at `positions` (in that order): the slice `--tag` shows."""
        chosen = list(positions)
        self.columns = {
            name: array(CODE_TYPE, map(col.__getitem__, chosen)) for name, col in self.columns.items()
        }
        self.offsets = array(OFFSET_TYPE, map(self.offsets.__getitem__, chosen))
        self.lengths = array(CODE_TYPE, map(self.lengths.__getitem__, chosen))


def array_of(kind: str, data: bytes) -> array:
    """The `array` of type `kind` whose bytes `data` are (a trailing part of a value dropped)."""
    values = array(kind)
    values.frombytes(memoryview(data)[: len(data) - len(data) % values.itemsize])
    return values

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

from array import array
from collections.abc import Iterable, Sequence

import msgspec

#: The coded fields, in the order `Columns.codes` holds them.
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
    """The columns as they are kept (msgpack): the names each code stands for, the codes as bytes.

    `names[f]` is the table of field `FIELDS[f]` for the fields of one string each ("" for none:
    no cause, no human decision, no T1 audit); `sets` the tables of the last two, `facets` (those
    seen) and `tags`: their distinct sets, each as a list. `codes[f]` is field `FIELDS[f]`'s
    column; `offsets` and `lengths` locate each record's line. `problems` are the lines that were
    not records, each as `line: message` (without the file's name).
    """

    names: list[list[str]]
    sets: list[list[list[str]]]
    codes: list[bytes]
    offsets: bytes
    lengths: bytes
    problems: list[str]


class Table:
    """The columns unpacked for use: one `array` per field and the names behind its codes."""

    def __init__(self, kept: Columns) -> None:
        self.names: list[list] = [list(names) for names in kept.names] + [list(s) for s in kept.sets]
        self.columns = {name: _array(CODE_TYPE, data) for name, data in zip(FIELDS, kept.codes, strict=True)}
        self.offsets = _array(OFFSET_TYPE, kept.offsets)
        self.lengths = _array(CODE_TYPE, kept.lengths)
        self.problems = kept.problems

    def __len__(self) -> int:
        return len(self.offsets)

    def valid(self, end: int) -> bool:
        """Whether every column has one value per record and every line lies within the first
        `end` bytes of the file (else the value is not used). The codes themselves are not walked
        (a million of each would cost a second at every start): the value is signed together with
        the hash of the code that wrote it (`column_store`), so no other codes are ever read."""
        count = len(self.offsets)
        if len(self.names) != len(FIELDS) or len(self.lengths) != count:
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
        """The values of `field` some record has, in table order."""
        names = self.table(field)
        return [names[code] for code in sorted(set(self.columns[field]))]

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


def _array(kind: str, data: bytes) -> array:
    values = array(kind)
    values.frombytes(data[: len(data) - len(data) % values.itemsize])
    return values

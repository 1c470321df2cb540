"""One of the viewer's columns (`columns.Table`): its values all in memory, or kept in the index a
page at a time and loaded when first asked for.

At ten million records the columns are 480 MB. A later view reads none of them whole to answer
its first requests: the first page of the list reads a page of four columns (its lines' places
and pairs), a decision finds its record by bisection (a page per step), and only a filter or a
search over every record loads a column whole. Each page is a value of its own in the index
(`column_store`), signed with the file's extent like every value, so a page is read, checked and
turned into an `array` in one call each (`array.frombytes`), never a Python object per record.

A page that cannot be loaded any more (the index replaced meanwhile by a view of the file as it
grew) is an error naming the file, as a line that changed under the viewer is
(`disk_records.RecordsOnDisk`): the columns it had are never mixed with another file's.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

from ...core.errors import UsageError

#: Values a page holds (64 Ki: 256 KiB of codes, 512 KiB of offsets).
PAGE_SHIFT = 16
PAGE_VALUES = 1 << PAGE_SHIFT

#: Loads the pages numbered (their values, each None when the index no longer holds it as kept).
PageLoader = Callable[[list[int]], "list[array | None]"]
#: Pages loaded at once when a column is loaded whole (one connection to the index for them).
BATCH = 32


def page_count(count: int) -> int:
    """How many pages `count` values take."""
    return -(-count // PAGE_VALUES)


class Column:
    """The `count` values of one column: `values` when all are in memory, else `load`ed a page at
    a time (`__getitem__`) or whole (`whole`). `source` names the results file in errors."""

    def __init__(
        self, values: array | None = None, *, count: int = 0, load: PageLoader | None = None, source: str = ""
    ) -> None:
        self._values = values
        self._count = len(values) if values is not None else count
        self._load = load
        self._pages: dict[int, array] = {}
        self._source = source

    def __len__(self) -> int:
        return self._count

    @property
    def loaded(self) -> bool:
        """Whether every value is in memory."""
        return self._values is not None

    def __getitem__(self, position: int) -> int:
        values = self._values
        if values is not None:
            return values[position]
        if not 0 <= position < self._count:
            raise IndexError(position)
        return self._page(position >> PAGE_SHIFT)[position & (PAGE_VALUES - 1)]

    def __setitem__(self, position: int, value: int) -> None:
        """Set one value (a person's decision in the `human` column), in its page or in the whole."""
        if self._values is not None:
            self._values[position] = value
        elif 0 <= position < self._count:
            self._page(position >> PAGE_SHIFT)[position & (PAGE_VALUES - 1)] = value
        else:
            raise IndexError(position)

    def whole(self) -> array:
        """Every value, as one `array` (the pages not yet loaded loaded now, then let go)."""
        if self._values is None:
            pages = page_count(self._count)
            values = None
            for first in range(0, pages, BATCH):
                numbers = range(first, min(first + BATCH, pages))
                self._fetch([number for number in numbers if number not in self._pages])
                for number in numbers:
                    page = self._pages.pop(number)
                    if values is None:
                        values = array(page.typecode)
                    values.extend(page)
            self._values = values if values is not None else array("I")
        return self._values

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Column):
            return self.whole() == other.whole()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def _page(self, number: int) -> array:
        if number not in self._pages:
            self._fetch([number])
        return self._pages[number]

    def _fetch(self, numbers: list[int]) -> None:
        """Load the pages `numbers` into `_pages`, each checked to hold as many values as it must."""
        if not numbers:
            return
        loaded = [None] * len(numbers) if self._load is None else self._load(numbers)
        for number, page in zip(numbers, loaded, strict=True):
            expected = min(PAGE_VALUES, self._count - (number << PAGE_SHIFT))
            if page is None or len(page) != expected:
                raise UsageError(
                    f"{self._source}: the index beside it changed since the viewer read it "
                    "(was the file viewed again as it grew?): restart `tabench view`"
                )
            self._pages[number] = page

"""Line lengths of the rubric and policy files, checked before the parser sees them.

Lark's time on one line grows faster than the line's length (a 200 KB line takes seconds), and a
battery is written by someone else. A line over `MAX_LINE_CHARS` is a `SpecError` at its line,
found in one pass over the text.
"""

from __future__ import annotations

from ..core.errors import SpecError

#: The longest line a rubric or policy file may have (characters): a field text longer than this
#: belongs in a triple-quoted string over several lines, and Lark's time on one line grows faster
#: than its length.
MAX_LINE_CHARS = 64 * 1024


def check_line_lengths(text: str, path: str) -> None:
    """`SpecError` at the first line of `text` longer than `MAX_LINE_CHARS`, found in one pass."""
    start = 0
    number = 1
    while True:
        end = text.find("\n", start)
        stop = len(text) if end < 0 else end
        if stop - start > MAX_LINE_CHARS:
            raise SpecError(
                f"line {number} is {stop - start:,} characters long, over the limit of {MAX_LINE_CHARS:,}",
                path=path,
                line=number,
                col=MAX_LINE_CHARS + 1,
                source_line=text[start : start + 60] + "...",
                hint='write a long text as a triple-quoted string ("""...""") over several lines',
            )
        if end < 0:
            return
        start, number = end + 1, number + 1

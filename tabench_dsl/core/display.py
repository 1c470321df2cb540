"""Text written by others, made safe to show: the one place that decides how it looks on a screen.

Batteries, answers files, results files and judge replies come from people and programs tabench
does not trust. Shown as they are, a few characters in them act instead of being read: an escape
sequence (`\\x1b[2J`, `\\x1b]8;;URL\\x07`) clears the terminal, retitles it or hides a hyperlink; a
carriage return overwrites the line it is on; a bidi override (U+202E) makes `txt.exe` read `exe.txt`;
a zero-width or tag character hides words from the reader that a judge still reads. `shown` turns each
such character into a visible escape (`\\x1b`, `\\r`, `<U+202E>`) and keeps every other character,
so accented letters, CJK and emoji read as written.

Which characters: the C0 and C1 controls and DEL, Unicode format characters (category Cf: bidi
controls, zero-width characters, the BOM, tag characters), line and paragraph separators (Zl, Zp)
and lone surrogates (Cs, which no terminal encoding can print). A backslash is left as it is: text
that spells `\\x1b` itself reads the same as an escaped ESC, a price paid for keeping ordinary text
(paths, regular expressions) unchanged.

`rich` reads `[...]` in a plain string as markup (`[/foo]` raises, `[link=URL]` makes a hyperlink)
and `:name:` as an emoji code; text for a rich table goes in as `literal(text)`, a `rich.text.Text`,
which rich never parses. `json_for_terminal` makes JSON output safe the same way without changing
any value it holds. The viewer's page (review/templates/viewer.js) applies the same rule in the browser,
and the review pages' templates (review/templating.py) call `shown` on every value before escaping.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

#: Characters that may be shown as they are without a look: printable ASCII. Runs of anything else
#: are looked at one character at a time.
_OTHER_THAN_ASCII_TEXT = re.compile(r"[^\x20-\x7e]+")
#: Non-printable by Python's definition but harmless on a screen: spaces (Zs) such as the no-break
#: space, private-use characters (Co) and code points this Python's Unicode tables do not know yet.
_HARMLESS_NONPRINTABLE = frozenset(("Zs", "Co", "Cn"))
#: The escapes of the controls people know by a letter.
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
#: A JSON string may hold any of these raw: control characters below U+0020 are escaped by every
#: encoder, but DEL, C1 controls, format characters and separators are not.
_JSON_SUSPECT = re.compile(r"[^\x00-\x7e]+")


def visible(char: str) -> str:
    """The escape that shows one character: `\\t`, `\\x1b`, `\\x9b`, `<U+202E>`."""
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"<U+{code:04X}>"


def is_shown_as_is(char: str) -> bool:
    """True for a character a screen shows as a glyph or a space and never acts on."""
    return char.isprintable() or unicodedata.category(char) in _HARMLESS_NONPRINTABLE


def shown(text: str, *, lines: bool = False) -> str:
    """`text` with every character that could act on a terminal or hide text made visible.

    A single-line field (a system name, a question id, a path) shows tabs and line breaks as `\\t`
    and `\\n` too, so it stays on one line and two names never look alike. With `lines=True` (an
    answer, a reason, a reply, a prompt) tabs and line breaks are kept, a carriage return too when a
    line break follows it (a Windows line end); a lone carriage return is still shown as `\\r`.
    """
    if text.isprintable():  # most names and one-line messages: nothing to look at
        return text

    def fix(match: re.Match[str]) -> str:
        run = match.group()
        out: list[str] = []
        last = len(run) - 1
        for i, char in enumerate(run):
            kept_as_layout = lines and (char in "\n\t" or (char == "\r" and i < last and run[i + 1] == "\n"))
            out.append(char if kept_as_layout or is_shown_as_is(char) else visible(char))
        return "".join(out)

    return _OTHER_THAN_ASCII_TEXT.sub(fix, text)


def literal(text: str, *, lines: bool = False, style: str = "") -> Text:
    """`shown(text)` as a rich `Text`: rich reads no markup, emoji code or link in it."""
    from rich.text import Text

    return Text(shown(text, lines=lines), style=style)


def json_for_terminal(data: bytes) -> bytes:
    """JSON text with every character `shown` would escape written as a `\\uXXXX` escape.

    JSON allows such escapes anywhere in a string and decodes them to the same character, so every
    value is unchanged for a program reading the output while a terminal showing it sees only
    printable text. `data` must be UTF-8 JSON; ASCII output (the usual case) is returned as it is.
    """
    if data.isascii() and b"\x7f" not in data:
        return data
    text = data.decode("utf-8")

    def fix(match: re.Match[str]) -> str:
        return "".join(char if is_shown_as_is(char) else _json_escape(char) for char in match.group())

    return _JSON_SUSPECT.sub(fix, text).encode("utf-8")


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # outside the basic plane: JSON spells it as a surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"

"""The canonical layout of a rubric file, for `tabench fmt` and the language server's formatting.

The layout:

- `question ID {` on a line of its own, each field on its own line indented two spaces, `}` alone
  at the start of a line; one blank line between questions;
- a field's keyword and arguments separated by one space, in the order written;
- a `"..."` string written in one canonical style for its value: only `"`, `\\`, control and
  invisible characters escaped (`\\n`, `\\t`, `\\u00a0`, ...), every other character as itself;
- a `\"\"\"...\"\"\"` string kept exactly as written (its value depends on its indentation);
- comments kept where they stand (on their own line at the level of what follows them, or after
  a field), their text unchanged but for trailing white space; at most one blank line in a row,
  none at the start or end of a question or of the file; a final line break.

Formatting reads with its own small lexer, over a file the parser accepts (`format_rubric` raises
the parser's `SpecError` otherwise), and the caller checks that the result parses to the same
questions (`formatting.format_text`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from json import JSONDecoder

#: One token of a rubric file: a long string, a one-line string, a comment, a brace, a line break,
#: spaces, or a bare word (the grammar's own shapes).
_TOKEN = re.compile(
    r'(?P<long>"""[^"]*(?:"(?!"")[^"]*)*""")'
    r'|(?P<string>"(?:[^"\\\n]|\\.)*")'
    r"|(?P<comment>#[^\n]*)"
    r"|(?P<open>\{)|(?P<close>\})"
    r"|(?P<newline>\r?\n)"
    r"|(?P<space>[\t \f\r]+)"
    r'|(?P<word>[^\s{}"#]+)'
)

#: The decoder of a one-line string, as the parser reads one (control characters allowed).
_JSON = JSONDecoder(strict=False)

#: The indentation of a field line and of a comment inside a question.
INDENT = "  "

#: The escapes a canonical one-line string uses for characters that are not written as themselves.
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


@dataclass
class _Line:
    """One line of a question's body: a field (`words`, each as it will be written) or a comment
    alone (`words` empty), with the comment after it and whether a blank line came before."""

    words: list[str] = field(default_factory=list)
    comment: str | None = None
    blank_before: bool = False


@dataclass
class _Question:
    header: str
    blank_before: bool = False
    header_comment: str | None = None
    lines: list[_Line] = field(default_factory=list)
    close_comment: str | None = None


@dataclass
class _TopComment:
    text: str
    blank_before: bool


def canonical_string(value: str) -> str:
    """`value` as a `"..."` string in the canonical style: `"`, `\\` and control characters
    escaped, invisible and format characters (categories Cc, Cf, Co, Cs, Zl, Zp, Zs but the
    space) as `\\uXXXX`, surrogate pairs for characters past U+FFFF."""
    out = ['"']
    for ch in value:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ch != " " and unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp", "Zs", "Cn"):
            code = ord(ch)
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
            else:
                out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _tokens(text: str) -> list[tuple[str, str]]:
    """The file's tokens as (kind, text), spaces left out."""
    found = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        assert kind is not None
        if kind != "space":
            found.append((kind, match.group()))
    return found


def _string_as_written(raw: str) -> str:
    """A `"..."` string rewritten in the canonical style (its value unchanged)."""
    return canonical_string(_JSON.decode(raw))


class _Reader:
    """Tokens -> top-level comments and questions, with blank lines and trailing comments noted."""

    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0
        self.items: list[_Question | _TopComment] = []

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        self.at += 1
        return token

    def breaks(self) -> int:
        """Skip line breaks; how many there were."""
        count = 0
        while self.peek()[0] == "newline":
            self.take()
            count += 1
        return count

    def read(self) -> list[_Question | _TopComment]:
        newlines = self.breaks()
        while self.peek()[0] != "end":
            kind, text = self.take()
            if kind == "comment":
                self.items.append(_TopComment(text.rstrip(), blank_before=newlines > 1))
            else:  # `question`: the parser has checked the shape `question ID {`
                _, qid = self.take()
                self.take()
                question = self.question(qid)
                question.blank_before = newlines > 1
                self.items.append(question)
            newlines = self.breaks()
        return self.items

    def question(self, qid: str) -> _Question:
        question = _Question(header=f"question {qid} {{")
        if self.peek()[0] == "comment":
            question.header_comment = self.take()[1].rstrip()
        newlines = self.breaks()
        while self.peek()[0] != "close":
            line = _Line(blank_before=newlines > 1 and bool(question.lines))
            if self.peek()[0] == "comment":
                line.comment = self.take()[1].rstrip()
            else:
                while self.peek()[0] in ("word", "string", "long"):
                    kind, text = self.take()
                    line.words.append(_string_as_written(text) if kind == "string" else text)
                if self.peek()[0] == "comment":
                    line.comment = self.take()[1].rstrip()
            question.lines.append(line)
            newlines = self.breaks()
        self.take()  # `}`
        if self.peek()[0] == "comment":
            question.close_comment = self.take()[1].rstrip()
        return question


def _with_comment(text: str, comment: str | None) -> str:
    return text if comment is None else f"{text}  {comment}"


def format_rubric(text: str) -> str:
    """The canonical layout of rubric `text` (a file the parser accepts)."""
    out: list[str] = []
    previous: _Question | _TopComment | None = None
    for item in _Reader(text).read():
        if previous is not None and (isinstance(previous, _Question) or item.blank_before):
            out.append("")
        if isinstance(item, _TopComment):
            out.append(item.text)
        else:
            out.append(_with_comment(item.header, item.header_comment))
            for line in item.lines:
                if line.blank_before:
                    out.append("")
                body = INDENT + " ".join(line.words) if line.words else ""
                if not line.words:
                    out.append(INDENT + (line.comment or ""))
                else:
                    out.append(_with_comment(body, line.comment))
            out.append(_with_comment("}", item.close_comment))
        previous = item
    return "\n".join(out) + "\n" if out else ""

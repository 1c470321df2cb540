"""Lark's syntax errors -> `SpecError`s at `path:line:col`, with a hint a person can act on.

Used by `parse` for the errors of `tabench_tokens.lark` (rubric files; `tabench.lark` hands the
files it rejects to that grammar) and of `policy.lark`. A terminal is named the way an author
thinks of it: "a field", "a string".
"""

from __future__ import annotations

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from ..core.errors import SpecError

#: The hint for a one-line string that does not end on its line.
HINT_UNTERMINATED = 'a "..." string ends on its line; use """...""" for text over several lines'
#: The hint for a triple-quoted string without its closing quotes.
HINT_UNTERMINATED_LONG = 'close the text with """'
#: The hint for a bad escape in a one-line string.
HINT_ESCAPE = (
    'a "..." string takes the escapes of JSON: \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX; '
    'use """...""" for raw text'
)


#: How a terminal is named in an error message.
_TERMINAL_WORDS: dict[str, str] = {
    "NAME": "a field",
    "RBRACE": "'}'",
    "LBRACE": "'{'",
    "QUESTION": "'question'",
    "QID": "a question id",
    "STRING": "a string",
    "LONG_STRING": "a string",
    "WORD": "a word",
    "_NL": "a line break",
    "$END": "the end of the file",
    "RULE_LINE": "a rule",
    "CONTINUATION_LINE": "an indented line",
}


def _describe_token(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    if token.type == "_NL":
        return "line break"
    if token.type in ("STRING", "LONG_STRING"):
        return "string"
    return f"'{_clip(str(token))}'"


def _expected(names: set[str] | frozenset[str]) -> str:
    words = sorted({_TERMINAL_WORDS.get(n, n) for n in names} - {"a line break"})
    if not words:
        return "a line break"
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def syntax_error(
    exc: UnexpectedInput, text: str, path: str, lines: list[str], *, fields: tuple[str, ...]
) -> SpecError:
    """Lark's error `exc` for `text` (split into `lines`) as a SpecError; `fields` for the hint."""
    line, col = exc.line, exc.column
    hint = None
    if isinstance(exc, UnexpectedCharacters):
        rest = text[exc.pos_in_stream :]
        if rest.startswith('"""'):
            message, hint = "unterminated string", HINT_UNTERMINATED_LONG
        elif rest.startswith('"'):
            message, hint = "unterminated string", HINT_UNTERMINATED
        else:
            message = f"unexpected character {_char(rest[:1])}; expected {_expected(exc.allowed)}"
    elif isinstance(exc, UnexpectedToken):
        found = _describe_token(exc.token)
        expected = set(exc.expected)
        if exc.token.type == "$END":
            line, col = _end_position(lines)
        if "NAME" in expected and "RBRACE" in expected:
            message = f"expected a field or '}}', found {found}"
            if exc.token.type in ("QUESTION", "$END"):
                hint = "a question block ends with '}'"
            else:
                hint = "fields are " + ", ".join(fields)
        elif "QUESTION" in expected:
            message = f"expected 'question', found {found}"
            hint = 'a rubric file holds question blocks: question ID { prompt "..." ... }'
        else:
            message = f"unexpected {found}; expected {_expected(expected)}"
    else:  # UnexpectedEOF: not raised by the LALR parser, kept for completeness
        message = "unexpected end of file"
    return SpecError(message, path=path, line=line, col=col, hint=hint, source_line=source_line(lines, line))


def _char(ch: str) -> str:
    # An invisible character (a no-break space pasted from a web page) is named by its code point.
    return f"'{ch}'" if ch.isprintable() and not ch.isspace() else f"U+{ord(ch):04X}"


def _end_position(lines: list[str]) -> tuple[int, int]:
    # Point at the end of the last non-blank line: that is where the missing text belongs.
    for number in range(len(lines), 0, -1):
        if lines[number - 1].strip():
            return number, len(lines[number - 1]) + 1
    return 1, 1


def source_line(lines: list[str], number: int) -> str | None:
    """Line `number` (1-based) of `lines`, or None past either end."""
    return lines[number - 1] if 0 < number <= len(lines) else None


def _clip(text: str, width: int = 30) -> str:
    text = text.split("\n", 1)[0]
    return text if len(text) <= width else text[: width - 3] + "..."

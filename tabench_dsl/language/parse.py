"""Spec files -> file-level nodes: the Lark parsers (LALR, cached) and their transformers.

The grammars live in `grammar/`: `tabench.lark` for rubric files and `policy.lark` for policy
files. Parsing checks syntax only; what a field means (its name, its arguments, required fields)
is checked by `battery`, which can report every problem of a file instead of the first.

`tabench.lark` reads a rubric file in coarse terminals (a question's header with all of its
whole field lines, its closing brace): Lark's cost is per terminal, and a battery of thousands of
questions reads several times faster so. `_RubricTransformer` cuts the field lines into keywords
and arguments with the grammar's own patterns. A file `tabench.lark` rejects is read again with
`tabench_tokens.lark`, the same language one word per terminal, which reads the rare spellings
the coarse grammar leaves to it or reports the syntax error at the exact word. Both decode their
strings with `string_literals`.

Every Lark error becomes a `SpecError` at `path:line:col` with a hint a person can act on (`syntax`).
"""

from __future__ import annotations

import os
import re
import sys
from functools import cache
from pathlib import Path
from typing import Literal

import msgspec
from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput, UnexpectedToken, VisitError

from ..core.errors import SpecError
from ..core.nodes import Pos, Rule
from ..core.resources import grammar_dir
from .line_limits import check_line_lengths
from .string_literals import decode_long_string, decode_string, escaped_string
from .syntax import source_line, syntax_error

#: The fields a question may have, in the order the hint lists them.
FIELDS: tuple[str, ...] = (
    "prompt",
    "gold",
    "accept",
    "trap",
    "structure",
    "scoring",
    "guide",
    "facet",
    "exemplar",
    "t1",
    "tags",
    "match",
)

#: A rule id: `S<n>` before a colon at the start of the rule.
RULE_ID = re.compile(r"S\d+(?=:)")


# gc=False: these hold strings and positions only, never a cycle; the cyclic collector need not
# track the hundreds of thousands a large battery makes.


def token_at(token: Token) -> tuple[int, int, int, int]:
    """A token's line, column, start and end offsets. Lark's lexer sets all four (its types allow
    None, for tokens made by hand)."""
    line, column, start, end = token.line, token.column, token.start_pos, token.end_pos
    assert line is not None and column is not None and start is not None and end is not None
    return line, column, start, end


class Arg(msgspec.Struct, frozen=True, gc=False):
    """One argument of a field: a decoded string or a bare word, where it was written."""

    kind: Literal["string", "word"]
    value: str
    pos: Pos


class Field(msgspec.Struct, frozen=True, gc=False):
    """One line of a question: its keyword (any identifier, checked later) and its arguments."""

    name: str
    args: tuple[Arg, ...]
    pos: Pos


class RawQuestion(msgspec.Struct, frozen=True):
    """A question block as written: `pos` is the `question` keyword, `id_pos` its id."""

    id: str
    pos: Pos
    id_pos: Pos
    fields: tuple[Field, ...]


class RubricFile(msgspec.Struct, frozen=True):
    """A parsed rubric file: its questions in file order."""

    path: str
    questions: tuple[RawQuestion, ...]


class PolicyFile(msgspec.Struct, frozen=True):
    """A parsed policy file: its S-rules in file order."""

    path: str
    rules: tuple[Rule, ...]


@cache
def _parser(name: str) -> Lark:
    # Positions come from tokens, so the tree does not carry them (propagate_positions is off).
    # Lark keeps its analysis of the grammar in a cache file (checked against the grammar's hash)
    # and loads it in 2 ms instead of building it in 25 ms.
    return Lark.open(
        name, rel_to=str(grammar_dir() / name), parser="lalr", start="start", cache=_grammar_cache(name)
    )


def _grammar_cache(name: str) -> str | bool:
    """Where Lark may keep its analysis of grammar `name`: a folder only this user can write.

    Lark's own default (`cache=True`) is a predictable name in the shared temporary folder, and the
    file is a pickle: anyone who can write there could plant one. Without a private folder the
    analysis is simply not cached.
    """
    import lark

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "tabench")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder)
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            return False
    except OSError:
        return False
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    return os.path.join(folder, f"{name}-lark{lark.__version__}-py{python}.cache")


def parse_rubric(text: str, path: str | Path) -> RubricFile:
    """Parse the text of a rubric file. Raises `SpecError` at the first syntax error."""
    path = str(path)
    check_line_lengths(text, path)
    parsed = _read_coarse(text, path)
    return parsed if parsed is not None else _read_by_tokens(text, path)


def _read_coarse(text: str, path: str) -> RubricFile | None:
    """The file read with tabench.lark; None when that grammar leaves it to tabench_tokens.lark."""
    try:
        tree = _parser("tabench.lark").parse(text)
    except UnexpectedInput:
        return None
    try:
        return _RubricTransformer(path, text).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, _Unread):
            return None
        raise


def _read_by_tokens(text: str, path: str) -> RubricFile:
    """The file read with tabench_tokens.lark: slower, but it reads every spelling the language
    allows and raises `SpecError` at the exact word that is wrong."""
    lines = text.split("\n")
    try:
        tree = _parser("tabench_tokens.lark").parse(text)
    except UnexpectedInput as exc:
        raise syntax_error(exc, text, path, lines, fields=FIELDS) from None
    try:
        return _TokensTransformer(path, lines).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, SpecError):
            raise exc.orig_exc from None
        raise


def parse_policy(text: str, path: str | Path) -> PolicyFile:
    """Parse the text of a policy file. Raises `SpecError` at the first syntax error."""
    path = str(path)
    check_line_lengths(text, path)
    lines = text.split("\n")
    try:
        tree = _parser("policy.lark").parse(text)
    except UnexpectedToken as exc:
        if exc.token.type == "CONTINUATION_LINE":
            raise SpecError(
                "an indented line continues a rule, but no rule comes before it",
                path=path,
                line=exc.line,
                col=exc.column,
                source_line=source_line(lines, exc.line),
                hint="start the rule at the beginning of the line",
            ) from None
        raise syntax_error(exc, text, path, lines, fields=FIELDS) from None
    except UnexpectedInput as exc:
        raise syntax_error(exc, text, path, lines, fields=FIELDS) from None
    return _PolicyTransformer(path).transform(tree)


class _Unread(Exception):
    """The coarse grammar's pieces cannot be cut as `tabench_tokens.lark` would read them."""


def _grammar_patterns(name: str) -> dict[str, str]:
    """The `NAME: /regex/` terminals of a grammar file, by name: one source for Lark and `re`."""
    text = (grammar_dir() / name).read_text(encoding="utf-8")
    return dict(re.findall(r"(?m)^(_?[A-Z][A-Z_]*)(?:\.\d+)?: /(.*)/$", text))


@cache
def _cutters() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The patterns that cut tabench.lark's terminals: `question ID {`, field line, argument.

    A field line gives (keyword, arguments, line end); an argument (space, long string, string,
    word), the kinds it is not as "". Their lengths add up to the text they came from, which is
    how positions are counted without a match object per piece.
    """
    t = _grammar_patterns("tabench.lark")
    head = re.compile(f"question(?:{t['_SPACE']})({t['QID']})[\\t \\f]*\\{{{t['_GAP']}")
    # FIELD_LINE: NAME (_SPACE ARGUMENT)*, then the line end when there is one (not for LAST_FIELD).
    # Most fields are a keyword and one "..." string: that case comes as (space, string), the
    # others as all their arguments written, cut by `argument`.
    argument = f"{t['_SPACE']}(?:{t['LONG_STRING']}|{t['STRING']}|{t['WORD']})"
    one_string = f"({t['_SPACE']})({t['STRING']})(?!{t['_SPACE']}[^\\s#]|[^\\s#])"
    field = re.compile(f"({t['NAME']})(?:{one_string}|((?:{argument})*+))((?:{t['_LINE_END']})?)")
    argument = f"({t['_SPACE']})(?:({t['LONG_STRING']})|({t['STRING']})|({t['WORD']}))"
    return head, field, re.compile(argument)


def _json_string(raw: str) -> str:
    # A string with an escape; one without is the text between its quotes.
    value = escaped_string(raw)
    if value is None:
        raise _Unread  # a bad escape or a lone surrogate: tabench_tokens.lark's transformer reports it
    return value


class _RubricTransformer(Transformer):
    """tabench.lark's tree -> a `RubricFile`: each question's header and field lines cut apart.

    A field line is cut with the grammar's own patterns, and every keyword and argument gets the
    position `tabench_tokens.lark` would give it. Whatever the token grammar would read otherwise
    (a field named `question`, a string json refuses) raises `_Unread`: that file is read again.
    """

    def __init__(self, path: str, text: str) -> None:
        super().__init__(visit_tokens=False)
        self.path = path
        self.text = text
        self.head, self.field, self.argument = _cutters()

    def question(self, children: list[Token]) -> RawQuestion:
        head, *last, _close = children
        head_line, head_col, head_start, head_end = token_at(head)
        match = self.head.match(self.text, head_start, head_end)
        if match is None:
            raise _Unread
        # The field lines start after the header's own lines.
        start, line, line_start = head_start, head_line, head_start - head_col + 1
        breaks = self.text.count("\n", start, match.end())
        if breaks:
            line += breaks
            line_start = self.text.rindex("\n", start, match.end()) + 1
        fields: list[Field] = []
        self._fields(match.end(), head_end, line, line_start, fields)
        for token in last:  # LAST_FIELD
            token_line, token_col, token_start, token_end = token_at(token)
            self._fields(token_start, token_end, token_line, token_start - token_col + 1, fields)
        at = Pos(self.path, head_line, head_col)
        id_at = Pos(self.path, head_line, head_col + match.start(1) - head_start)
        return RawQuestion(match.group(1), at, id_at, tuple(fields))

    def start(self, children: list[RawQuestion]) -> RubricFile:
        return RubricFile(self.path, tuple(children))

    def _fields(self, at: int, end: int, line: int, line_start: int, out: list[Field]) -> None:
        """Cut the field lines from offset `at` to `end` into fields; append them to `out`.

        `line` is the line at `at`, `line_start` the offset where that line starts.
        """
        path = self.path
        for name, space, string, written, tail in self.field.findall(self.text, at, end):
            if name == "question":
                raise _Unread  # `question` as a keyword starts a question in tabench_tokens.lark
            field_pos = Pos(path, line, at - line_start + 1)
            at += len(name)
            if string:
                at += len(space)
                value = _json_string(string) if "\\" in string else string[1:-1]
                args: tuple[Arg, ...] = (Arg("string", value, Pos(path, line, at - line_start + 1)),)
                at += len(string)
            elif written:
                args, at, line, line_start = self._arguments(written, at, line, line_start)
            else:
                args = ()
            out.append(Field(name, args, field_pos))
            if "\n" in tail:
                line += tail.count("\n")
                line_start = at + tail.rindex("\n") + 1
            at += len(tail)
        if at != end:
            raise _Unread  # not cut into whole lines as Lark read them (never expected)

    def _arguments(
        self, written: str, at: int, line: int, line_start: int
    ) -> tuple[tuple[Arg, ...], int, int, int]:
        """The arguments `written` from offset `at`, and the offset, line and line start after them."""
        path, args = self.path, []
        for space, long, string, word in self.argument.findall(written):
            at += len(space)
            pos = Pos(path, line, at - line_start + 1)
            if word:
                args.append(Arg("word", word, pos))
                at += len(word)
            elif string:
                args.append(Arg("string", _json_string(string) if "\\" in string else string[1:-1], pos))
                at += len(string)
            else:
                args.append(Arg("string", decode_long_string(long), pos))
                if "\n" in long:
                    line += long.count("\n")
                    line_start = at + long.rindex("\n") + 1
                at += len(long)
        return tuple(args), at, line, line_start


class _TokensTransformer(Transformer):
    def __init__(self, path: str, lines: list[str]) -> None:
        super().__init__(visit_tokens=False)
        self.path = path
        self.lines = lines

    def _pos(self, token: Token) -> Pos:
        line, col, _, _ = token_at(token)
        return Pos(self.path, line, col)

    def _arg(self, token: Token) -> Arg:
        if token.type == "STRING":
            return Arg("string", self._decode(token), self._pos(token))
        if token.type == "LONG_STRING":
            return Arg("string", decode_long_string(str(token)), self._pos(token))
        return Arg("word", str(token), self._pos(token))

    def _decode(self, token: Token) -> str:
        line, column, _, _ = token_at(token)
        return decode_string(str(token), self.path, line, column, self.lines)

    def field(self, children: list[Token]) -> Field:
        name, *args = children
        return Field(str(name), tuple(self._arg(a) for a in args), self._pos(name))

    last_field = field

    def question(self, children: list) -> RawQuestion:
        keyword, qid, *fields = children
        return RawQuestion(str(qid), self._pos(keyword), self._pos(qid), tuple(fields))

    def start(self, children: list[RawQuestion]) -> RubricFile:
        return RubricFile(self.path, tuple(children))


class _PolicyTransformer(Transformer):
    def __init__(self, path: str) -> None:
        super().__init__(visit_tokens=False)
        self.path = path

    def rule(self, lines: list[Token]) -> Rule:
        # Joined with one space: trailing white space of every line and the indentation of each
        # continuation line are not part of the rule.
        first, *more = lines
        text = " ".join([first.rstrip(), *(line.strip() for line in more)])
        match = RULE_ID.match(text)
        line, col, _, _ = token_at(first)
        pos = Pos(self.path, line, col)
        return Rule(text=text, id=match.group() if match else None, pos=pos)

    def start(self, rules: list[Rule]) -> PolicyFile:
        return PolicyFile(self.path, tuple(rules))

"""Parsed question blocks -> validated `Question`s, collecting every problem on the way.

The grammar accepts any identifier as a field keyword and any run of strings and words as its
arguments; this module knows the fields (docs/language.md section 4.4), checks each line's shape, the required
fields, duplicates and the id rules, and reports each problem at the place to edit.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import cast

import msgspec

from ..core.closed_match import MatchCheck
from ..core.errors import SpecError
from ..core.nodes import EXEMPLAR_KINDS, Exemplar, ExemplarKind, Expect, Facet, Pos, Question
from ..core.scorer import FACET_NAMES
from .match_field import MATCH_USAGE, match_check
from .parse import FIELDS, Arg, Field, RawQuestion

#: A question id.
QUESTION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
#: A tag: a word a command line can name (`--tag easy`) without quoting; `:` and `/` allow
#: namespaces such as `topic:http` or `source/docs`.
TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]*\Z")
TAG_HINT = "a tag is letters, digits, '_', '.', ':', '/' and '-', starting with a letter or digit"

#: The fields that take one text.
TEXT_FIELDS: tuple[str, ...] = ("prompt", "gold", "accept", "trap", "structure", "scoring", "guide")
#: The fields a question may give once.
SINGLE_FIELDS: tuple[str, ...] = (
    "prompt",
    "gold",
    "trap",
    "structure",
    "scoring",
    "guide",
    "t1",
    "tags",
    "match",
)
#: The fields every question needs, non-empty.
REQUIRED_FIELDS: tuple[str, ...] = ("prompt", "gold")

#: How each field is written, for hints.
USAGE: dict[str, str] = {
    **{name: f'{name} "text"' for name in TEXT_FIELDS},
    "facet": 'facet NAME "text"',
    "exemplar": 'exemplar KIND "answer" why "reason" [expect pass|fail] [holdout]',
    "t1": "t1 off",
    "tags": 'tags "name" ["name" ...]',
    "match": MATCH_USAGE,
}

# A field's arguments: "text" a string, "word" a bare word, anything else that literal word.
# Slots from `_OPTIONAL_FROM[name]` on are an optional group, all given or none.
_SHAPES: dict[str, tuple[str, ...]] = {
    **{name: ("text",) for name in TEXT_FIELDS},
    "facet": ("word", "text"),
    "exemplar": ("word", "text", "why", "text", "expect", "word"),
    "t1": ("word",),
}
_OPTIONAL_FROM: dict[str, int] = {"exemplar": 4}
# The same names as sets, for the checks made on every field line.
_KNOWN, _SINGLE, _TEXT = frozenset(FIELDS), frozenset(SINGLE_FIELDS), frozenset(TEXT_FIELDS)


def build_questions(
    raw: list[RawQuestion], errors: list[SpecError], facet_names: Sequence[str] | None = FACET_NAMES
) -> list[Question]:
    """Validate the questions of a battery, in order; append each problem to `errors`.

    `facet_names` are the names a `facet` line may use: the scorer's `facets:` list (the default,
    `FACET_NAMES`, is for a scorer without one); None checks no facet name (the scorer's list could
    not be read, and that problem is reported on its own). Questions with a problem are left out
    of the result (their problems are in `errors`).
    """
    first: dict[str, RawQuestion] = {}
    questions = []
    for block in raw:
        before = len(errors)
        if not QUESTION_ID.match(block.id):
            errors.append(
                _error(
                    f"bad question id '{block.id}'",
                    block.id_pos,
                    hint="an id is letters, digits, '_', '.' and '-', starting with a letter or digit",
                )
            )
        elif block.id in first:
            seen = first[block.id].id_pos
            errors.append(
                _error(
                    f"duplicate question id '{block.id}'",
                    block.id_pos,
                    hint=f"first defined at {seen.path}:{seen.line}",
                )
            )
        else:
            first[block.id] = block
        question = _build(block, errors, facet_names)
        if question is not None and len(errors) == before:
            questions.append(question)
    return questions


def _build(block: RawQuestion, errors: list[SpecError], facet_names: Sequence[str] | None) -> Question | None:
    builder = _QuestionBuilder(block, errors, facet_names)
    for field in block.fields:
        builder.add(field)
    return builder.finish()


class _QuestionBuilder:
    """Collects one question block's fields, reporting each problem at its line."""

    def __init__(
        self, block: RawQuestion, errors: list[SpecError], facet_names: Sequence[str] | None
    ) -> None:
        self.block = block
        self.errors = errors
        self.facet_names = facet_names
        self.texts: dict[str, str] = {}
        self.field_pos: dict[str, Pos] = {}
        self.accept: list[str] = []
        self.facets: list[Facet] = []
        self.exemplars: list[Exemplar] = []
        self.t1 = True
        self.tags: tuple[str, ...] = ()
        self.match: MatchCheck | None = None
        self.guide_or_facet: Field | None = None  # the first non-empty guide or facet line

    def add(self, field: Field) -> None:
        name = field.name
        if name not in _KNOWN:
            self._error(f"unknown field '{name}'", field.pos, hint="fields are " + ", ".join(FIELDS))
            return
        if name in _SINGLE and name in self.field_pos:
            hint = f"'{name}' is first given at line {self.field_pos[name].line}"
            self._error(f"duplicate field '{name}'", field.pos, hint=hint)
            return
        self.field_pos.setdefault(name, field.pos)
        if name == "tags":  # any number of strings: not one of the fixed shapes `_match` checks
            self.tags = _tags(field, self.errors)
            return
        if name == "match":  # a kind, a value and options: its own shapes (`match_field`)
            self.match = match_check(field, self.errors)
            return
        field, holdout = _without_holdout(field)
        args = _match(field, self.errors)
        if args is None or (name in ("guide", "facet") and not self._guide_or_facets(field, args)):
            return
        if name == "accept":
            if args[0].value.strip():
                self.field_pos[f"accept.{len(self.accept)}"] = field.pos
                self.accept.append(args[0].value)
        elif name in _TEXT:
            self.texts[name] = args[0].value
        elif name == "facet":
            facet = _facet(field, args, self.errors, self.facet_names)
            if facet is not None and facet.text.strip():
                self.facets.append(facet)
        elif name == "exemplar":
            exemplar = _exemplar(field, args, self.errors, holdout=holdout)
            if exemplar is not None:
                self.exemplars.append(exemplar)
        elif args[0].value in ("off", "on"):
            self.t1 = args[0].value == "on"
        else:
            self._error(f"t1 must be off or on, not '{args[0].value}'", args[0].pos)

    def _guide_or_facets(self, field: Field, args: Sequence[Arg]) -> bool:
        """False (and an error) for a guide after facet lines or a facet line after a guide."""
        if field.name not in ("guide", "facet") or not args[-1].value.strip():
            return True
        first = self.guide_or_facet
        if first is not None and "guide" in (field.name, first.name):
            hint = f"'{first.name}' is given at line {first.pos.line}"
            self._error("a question has facet lines or one guide, not both", field.pos, hint=hint)
            return False
        self.guide_or_facet = first or field
        return True

    def finish(self) -> Question | None:
        """The question, or None when a required field is missing, empty or malformed."""
        block, ok = self.block, True
        for name in REQUIRED_FIELDS:
            hint = 'every question needs prompt "..." and gold "..."'
            if name not in self.field_pos:
                self._error(f"question '{block.id}' has no {name}", block.pos, hint=hint)
                ok = False
            elif name not in self.texts:
                ok = False  # its line is malformed and already reported
            elif not self.texts[name].strip():
                self._error(f"empty {name} in question '{block.id}'", self.field_pos[name], hint=hint)
                ok = False
        if not ok:
            return None
        optional = {k: v for k, v in self.texts.items() if v.strip()}
        return Question(
            id=block.id,
            prompt=self.texts["prompt"],
            gold=self.texts["gold"],
            pos=block.pos,
            accept=tuple(self.accept),
            trap=optional.get("trap"),
            structure=optional.get("structure"),
            scoring=optional.get("scoring"),
            guide=optional.get("guide"),
            facets=tuple(self.facets),
            exemplars=tuple(self.exemplars),
            t1=self.t1,
            tags=self.tags,
            match=self.match,
            field_pos=self.field_pos,
        )

    def _error(self, message: str, at: Pos, *, hint: str | None = None) -> None:
        self.errors.append(_error(message, at, hint=hint))


def _facet(
    field: Field, args: Sequence[Arg], errors: list[SpecError], facet_names: Sequence[str] | None
) -> Facet | None:
    name, text = args
    if facet_names is not None and name.value not in facet_names:
        errors.append(
            _error(f"unknown facet '{name.value}'", name.pos, hint="facets are " + ", ".join(facet_names))
        )
        return None
    return Facet(name=name.value, text=text.value, pos=field.pos)


def _tags(field: Field, errors: list[SpecError]) -> tuple[str, ...]:
    """The tags of a `tags` line, each reported where it is wrong (a word, a bad name, a repeat)."""
    hint = "write it as: " + USAGE["tags"]
    if not field.args:
        errors.append(_error("field 'tags' needs at least one tag", field.pos, hint=hint))
        return ()
    tags: list[str] = []
    for arg in field.args:
        if arg.kind != "string":
            message = f"expected a string in field 'tags', found {_shown(arg)}"
            errors.append(_error(message, arg.pos, hint=hint))
        elif not TAG.match(arg.value):
            errors.append(
                _error(
                    f"bad tag {_quoted(arg.value)}",
                    arg.pos,
                    hint=TAG_HINT,
                )
            )
        elif arg.value in tags:
            errors.append(_error(f"duplicate tag '{arg.value}'", arg.pos, hint="give each tag once"))
        else:
            tags.append(arg.value)
    return tuple(tags)


def _quoted(text: str) -> str:
    """A tag as an error quotes it: JSON-escaped, so a control character or a line break shows."""
    import json

    return json.dumps(text, ensure_ascii=False)


def _without_holdout(field: Field) -> tuple[Field, bool]:
    """An exemplar line without its trailing `holdout` word, and whether it had one."""
    args = field.args
    if field.name == "exemplar" and args and args[-1].kind == "word" and args[-1].value == "holdout":
        return msgspec.structs.replace(field, args=args[:-1]), True
    return field, False


def _exemplar(
    field: Field, args: Sequence[Arg], errors: list[SpecError], *, holdout: bool
) -> Exemplar | None:
    kind, answer, _, why, *rest = args
    ok = True
    if kind.value not in EXEMPLAR_KINDS:
        errors.append(
            _error(
                f"unknown exemplar kind '{kind.value}'",
                kind.pos,
                hint="kinds are " + ", ".join(EXEMPLAR_KINDS),
            )
        )
        ok = False
    expect = rest[1].value if rest else None
    if expect is not None and expect not in ("pass", "fail"):
        errors.append(_error(f"expect must be pass or fail, not '{expect}'", rest[1].pos))
        ok = False
    if not ok:
        return None
    return Exemplar(
        kind=cast(ExemplarKind, kind.value),  # checked above against EXEMPLAR_KINDS
        answer=answer.value,
        why=why.value,
        pos=field.pos,
        expect=cast(Expect | None, expect),
        holdout=holdout,
    )


def _match(field: Field, errors: list[SpecError]) -> Sequence[Arg] | None:
    """The field's arguments when they have the field's shape; else report where they differ."""
    args, shape = field.args, _SHAPES[field.name]
    if len(args) == len(shape) or len(args) == _OPTIONAL_FROM.get(field.name):
        for arg, slot in zip(args, shape, strict=False):  # without the optional group: fewer args
            if slot == "text":
                if arg.kind != "string":
                    break
            elif arg.kind != "word" or (slot != "word" and arg.value != slot):
                break
        else:
            return args
    return _mismatch(field, errors)


def _mismatch(field: Field, errors: list[SpecError]) -> list[Arg] | None:
    """`_match` slot by slot: report the first argument that differs from the field's shape."""
    shape = _SHAPES[field.name]
    optional_from = _OPTIONAL_FROM.get(field.name, len(shape))
    hint = "write it as: " + USAGE[field.name]
    args = list(field.args)
    for i, slot in enumerate(shape):
        if i >= len(args):
            if i == optional_from:
                return args
            errors.append(_error(f"incomplete field '{field.name}'", field.pos, hint=hint))
            return None
        arg = args[i]
        if slot == "text" and arg.kind != "string":
            expected = "a string"
        elif slot != "text" and arg.kind != "word":
            expected = "a word" if slot == "word" else f"'{slot}'"
        elif slot not in ("text", "word") and arg.value != slot:
            expected = f"'{slot}'"
        else:
            continue
        errors.append(
            _error(f"expected {expected} in field '{field.name}', found {_shown(arg)}", arg.pos, hint=hint)
        )
        return None
    if len(args) > len(shape):
        extra = args[len(shape)]
        what = "string" if extra.kind == "string" else _shown(extra)
        errors.append(
            _error(
                f"unexpected {what} after field '{field.name}'",
                extra.pos,
                hint=hint + "; one field per line",
            )
        )
        return None
    return args


def _shown(arg: Arg) -> str:
    return "a string" if arg.kind == "string" else f"'{arg.value}'"


def _error(message: str, at: Pos, *, hint: str | None = None) -> SpecError:
    return SpecError(message, path=at.path, line=at.line, col=at.col, hint=hint)

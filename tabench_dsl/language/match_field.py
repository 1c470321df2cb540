"""The rubric's `match` field: a mechanical check of a closed answer (`core.closed_match`).

    match number 42 [within 0.5] [decides]
    match choice "B" [among "ABCD"] [decides]
    match regex "PATTERN" [decides]

The value may be a bare word or a string (a pattern is best a string: it may hold spaces and
`#`). Each problem is an error at the argument to edit, with the message starting
`bad match check`, which lint reports as E214.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.closed_match import ALL_LETTERS, MATCH_KINDS, MatchCheck, check_pattern
from ..core.errors import SpecError
from ..core.nodes import Pos
from ..core.numbers import parse_number
from .parse import Arg, Field

MATCH_USAGE = (
    'match number 42 [within 0.5] | match choice "B" [among "ABCD"] | match regex "..." ; then [decides]'
)
#: The option each kind takes besides `decides`.
_OPTION = {"number": "within", "choice": "among"}


def match_check(field: Field, errors: list[SpecError]) -> MatchCheck | None:
    """The check `field` writes, or None (and an error appended) when it is out of shape."""
    args = list(field.args)
    problem = _Problems(errors)
    if not args:
        return problem.at(field.pos, "needs a kind: number, choice or regex")
    kind_arg = args[0]
    if kind_arg.kind != "word" or kind_arg.value not in MATCH_KINDS:
        return problem.at(kind_arg.pos, f"unknown kind {_shown(kind_arg)}; kinds are number, choice, regex")
    kind = kind_arg.value  # one of MATCH_KINDS, checked above
    if len(args) < 2:
        return problem.at(field.pos, f"'match {kind}' needs the expected value")
    value = args[1]
    decides = bool(args) and args[-1].kind == "word" and args[-1].value == "decides"
    options = args[2 : len(args) - 1 if decides else len(args)]
    option: str | None = None
    if options:
        name = _OPTION.get(kind)
        if options[0].kind != "word" or options[0].value != name or len(options) != 2:
            expected = f"'{name}' and its value, or 'decides'" if name else "'decides' alone"
            return problem.at(
                options[0].pos, f"expected {expected} after the value, found {_shown(options[0])}"
            )
        option = options[1].value
    if kind == "number":
        return _number(value, option, options, decides, problem)
    if kind == "choice":
        return _choice(value, option, options, decides, problem)
    reason = check_pattern(value.value)
    if reason is not None:
        return problem.at(value.pos, f"the pattern cannot run: {reason}")
    return MatchCheck("regex", value.value, decides=decides)


def _number(
    value: Arg, within: str | None, options: Sequence[Arg], decides: bool, problem: _Problems
) -> MatchCheck | None:
    if parse_number(value.value) is None:
        return problem.at(value.pos, f"{_shown(value)} is not a number")
    if within is not None:
        tolerance = parse_number(within)
        if tolerance is None or tolerance < 0 or within.strip().endswith("%"):
            return problem.at(options[1].pos, f"within {within!r}: a tolerance is a number >= 0")
    return MatchCheck("number", value.value.strip(), within=within, decides=decides)


def _choice(
    value: Arg, among: str | None, options: Sequence[Arg], decides: bool, problem: _Problems
) -> MatchCheck | None:
    letter = value.value.strip().upper()
    if len(letter) != 1 or letter not in ALL_LETTERS:
        return problem.at(value.pos, f"{_shown(value)} is not a choice letter (A to Z)")
    if among is not None:
        letters = among.strip().upper()
        if not letters or any(ch not in ALL_LETTERS for ch in letters) or len(set(letters)) != len(letters):
            return problem.at(options[1].pos, f'among {among!r}: the choices are distinct letters, as "ABCD"')
        if letter not in letters:
            return problem.at(value.pos, f"{letter!r} is not one of the choices {letters!r}")
        among = letters
    return MatchCheck("choice", letter, among=among, decides=decides)


class _Problems:
    def __init__(self, errors: list[SpecError]) -> None:
        self.errors = errors

    def at(self, pos: Pos, message: str) -> MatchCheck | None:
        """Report `message` at `pos`; None, the check a bad field gives."""
        self.errors.append(
            SpecError(
                f"bad match check: {message}",
                path=pos.path,
                line=pos.line,
                col=pos.col,
                hint="write it as: " + MATCH_USAGE,
            )
        )
        return None


def _shown(arg: Arg) -> str:
    return f'"{arg.value}"' if arg.kind == "string" else f"'{arg.value}'"

"""Mechanical checks for closed answers: a rubric's `match` field (docs/language.md section 8.10).

A question whose answer is a number, a choice letter or a short form written as a pattern can
carry one check, run after T1 and before the judge:

    match number 42 within 0.5     the answer's final number, within 0.5 of 42
    match choice "B" among "ABCD"  the letter the answer chose (a lone letter, `(B)`, `B)`, `Answer: B`)
    match regex "^\\s*Yarr\\s*$"     a pattern the answer matches (RE2: linear time, `core.linear_regex`)

A check that matches passes the answer without a judge call. With `decides`, an answer whose
reading is found and differs fails without a call too; an answer where nothing can be read (no
number, no chosen letter) always goes to the judge, as one without `decides` that does not match.

Reading a number never splits it into tokens: `1,234.5`, `-3`, `+0.25`, `6.8%`, `1.5e-3` and
`.5` are one number each. A percentage is compared as written (`6.8%` reads 6.8), so `match number
6.8` passes `6.8%` and fails `8%`. Numbers are compared as decimals, never as binary floats, so
`0.1 + 0.2` style rounding cannot pass or fail an answer. The reading is `numbers.final_number`,
in the home of every number tabench reads.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Literal

import msgspec

from .linear_regex import PatternError, compile_linear
from .numbers import final_number, parse_number

MatchKind = Literal["number", "choice", "regex"]
#: The kinds of check, in the order the docs give them.
MATCH_KINDS: tuple[MatchKind, ...] = ("number", "choice", "regex")
#: The letters a choice check reads when the question names none.
ALL_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

#: A whole answer that is one letter: `B`, `(B)`, `B.`, `B)`, `**B**`.
_LONE_LETTER = re.compile(r"\A[\s*_`\"']*\(?([A-Za-z])\)?[.:]?[\s*_`\"']*\Z")
#: `Answer: B`, `answer is (B)`, `ANSWER: b` anywhere (the last one counts).
_ANSWER_LETTER = re.compile(r"\banswer\s*(?:is\s*)?[:=]?\s*[*_]*\(?([A-Za-z])\)?(?![\w])", re.IGNORECASE)
#: An answer that starts with its choice: `B) ...`, `(B) ...`, `B. ...`.
_LEADING_LETTER = re.compile(r"\A[\s*_]*(?:\(([A-Za-z])\)|([A-Za-z])[).])(?:\s|\Z)")


class MatchCheck(msgspec.Struct, frozen=True):
    """A question's `match` field: what kind of reading, the expected value as written, and its
    options (`within` for a number, `among` for a choice, `decides` for any)."""

    kind: MatchKind
    expected: str
    within: str | None = None
    among: str | None = None
    decides: bool = False

    def field_text(self) -> str:
        """The field as a rubric writes it, after the keyword: `number 42 within 0.5 decides`."""
        from json import dumps

        value = self.expected if self.kind == "number" else dumps(self.expected, ensure_ascii=False)
        parts = [self.kind, value]
        if self.within is not None:
            parts += ["within", self.within]
        if self.among is not None:
            parts += ["among", dumps(self.among, ensure_ascii=False)]
        if self.decides:
            parts.append("decides")
        return " ".join(parts)


class MatchReading(msgspec.Struct, frozen=True):
    """What a check read in an answer (`read` None when nothing could be read) and whether it
    matched; `verdict` is `pass`, `fail` (a `decides` check read a different value) or None (to
    the judge)."""

    read: str | None
    matched: bool
    verdict: Literal["pass", "fail"] | None


def chosen_letter(answer: str, among: str = ALL_LETTERS) -> str | None:
    """The choice letter the answer gives, upper case, when it is one of `among`: the answer as a
    lone letter, else its last `Answer: X`, else a leading `X)` or `(X)`; None otherwise."""
    letters = among.upper()
    for pattern in (_LONE_LETTER, _ANSWER_LETTER, _LEADING_LETTER):
        found = [m for m in pattern.finditer(answer)]
        if found:
            letter = next(g for g in found[-1].groups() if g).upper()
            if letter in letters:
                return letter
    return None


def check_pattern(pattern: str) -> str | None:
    """Why RE2 cannot run `pattern` as a regex check, or None when it can."""
    try:
        compile_linear(pattern, ignore_case=False)
    except PatternError as exc:
        return str(exc)
    return None


def read_answer(check: MatchCheck, answer: str) -> MatchReading:
    """Run `check` on `answer` (its final text, reasoning cut)."""
    read: str | None
    if check.kind == "number":
        found = final_number(answer)
        expected = parse_number(check.expected)
        tolerance = parse_number(check.within) if check.within is not None else Decimal(0)
        read = found[0] if found else None
        matched = bool(
            found
            and expected is not None
            and tolerance is not None
            and abs(found[1] - expected) <= abs(tolerance)
        )
    elif check.kind == "choice":
        read = chosen_letter(answer, check.among or ALL_LETTERS)
        matched = read is not None and read == check.expected.strip().upper()
    else:
        found_text = compile_linear(check.expected, ignore_case=False).search(answer)
        if found_text is None:
            # A pattern reads the whole answer: with `decides`, no match is a reading that differs.
            return MatchReading(None, False, "fail" if check.decides else None)
        read, matched = found_text.group(), True
    if matched:
        return MatchReading(read, True, "pass")
    if check.decides and read is not None:
        return MatchReading(read, False, "fail")
    return MatchReading(read, False, None)


def match_reason(check: MatchCheck, reading: MatchReading) -> str:
    """The reason a record decided by `check` carries: what was read against what was expected."""
    if check.kind == "number":
        expected = check.expected + (f" within {check.within}" if check.within else "")
    elif check.kind == "choice":
        expected = check.expected
    else:
        expected = "a match of the pattern"
    read = "nothing matched" if reading.read is None else f"read {reading.read!r}"
    outcome = "matches" if reading.matched else "differs, and the check decides"
    return f"match {check.kind}: {read}, expected {expected}: {outcome}"

"""Numbers as tabench reads them in answers and keys: the one home of T1's reading (`t1_reading`),
the match checks (`closed_match`) and the builtin judge (`grading/judges/lexical`).

What every reader shares:

- a number is never split into pieces: `6.8` is one number (`8` is not in it), and digits grouped
  in threes by commas are one number without them (`1,499` is `1499`, `12,000,000.5` is
  `12000000.5`); a comma that groups nothing stays (`13,5` is not `135`);
- an ordinal is its number (`12th` is `12`), a decade keeps its `s` (`1920s` is not `1920`);
- values are decimals, never binary floats.

Where the readers differ, each difference is an option of `numeral` or a reader of its own, with why:

- `value`: T1 reads a decimal's value (`1,499.00` is `1499`: an answer that writes the cents names
  the key); the builtin judge reads decimals as written, since it matches code and versions as much
  as quantities (`3.10` is not `3.1`);
- `short_decades`: the builtin judge reads a two-digit decade as the full one (`90s` is `1990s`,
  `20s` is `2020s`); T1 passes without a judge, so it never guesses a century;
- `NUMBER_WORDS` and `ORDINAL_WORDS` (`four` is `4`, `second` is `2`) are read by the builtin judge
  only: T1 and the match checks read digits, and an answer in words goes to the judge;
- `%`, `percent` and `per cent` are one token for T1 (`PERCENT_WORDS`); a match check reads `6.8%` as
  6.8 (`NUMBER`); the builtin judge reads the number and drops the sign;
- thousands separators: T1 reads a number token whole, its commas dropped only when they all
  group it in threes (`12345,678` stays as written); a match check reads digits grouped in threes
  as one number and any other comma as the end of one (`12345,678` is 12345, then 678); the
  builtin judge drops each comma
  between a digit and three digits that end a word, in the whole text before it splits it into
  words (`ungrouped_text`: `12345,678` reads `12345678`, `10,000m` keeps its comma). Each reading
  is kept as it was: the other one changes what the builtin judge names in the fidelity sets
  (`a world 10,000m champion`) and what T1 passes;
- the match checks read a sign and an exponent (`-3`, `1.5e-3`, `.5`: `NUMBER`), which the token
  readers leave to the words around them.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

#: Digits grouped in threes by commas (`1,499`, `12,000,000`).
GROUPED = r"\d{1,3}(?:,\d{3})+"
#: An ordinal suffix (`12th`) or a decade's or plural's `s` (`1920s`), glued to digits.
SUFFIX = r"st|nd|rd|th|s"
_GROUPED_NUMBER = re.compile(GROUPED + r"(?:\.\d+)?")
#: A number as a token reader sees it: digit runs joined by `.` or `,`, and an optional suffix.
_NUMERAL = re.compile(rf"(?P<digits>\d+(?:[.,]\d+)*)(?P<suffix>{SUFFIX})?")
#: A comma between a digit and three digits that end a word: a thousands separator in a text.
_SEPARATOR_IN_TEXT = re.compile(r"(?<=\d),(?=\d{3}\b)")


def _wordlist(text: str) -> tuple[str, ...]:
    return tuple(text.split())


#: Number words read as digits (`four` is `4`): the builtin judge's, in golds and answers alike.
NUMBER_WORDS: dict[str, str] = {
    word: str(value)
    for value, word in enumerate(
        _wordlist(
            """zero one two three four five six seven eight nine ten eleven twelve thirteen
            fourteen fifteen sixteen seventeen eighteen nineteen twenty"""
        )
    )
}

#: Ordinal words read as digits, as `12th` reads `12` ("the second" is "2nd" is "2").
ORDINAL_WORDS: dict[str, str] = {
    word: str(value)
    for value, word in enumerate(
        _wordlist(
            """first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth
            thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"""
        ),
        start=1,
    )
}

#: The token T1 reads a percent sign, `percent` and `per cent` as.
PERCENT = "%"
#: Words that are a percent sign: one word, or two in a row.
PERCENT_WORDS: tuple[tuple[str, ...], ...] = (("percent",), ("per", "cent"))


def ungrouped(digits: str) -> str:
    """`digits` without its thousands separators when its commas group it in threes (`1,499.5` ->
    `1499.5`); as it is otherwise (`13,5`, `1,2345`)."""
    return digits.replace(",", "") if _GROUPED_NUMBER.fullmatch(digits) else digits


def ungrouped_text(text: str) -> str:
    """`text` without the commas that separate thousands (`1,499` -> `1499`), read comma by comma
    before the text is split into words: the builtin judge's reading (module docstring)."""
    return _SEPARATOR_IN_TEXT.sub("", text)


def canonical(digits: str) -> str:
    """The value of a number as written: thousands separators dropped, trailing fractional zeros
    dropped (`1,499.00` -> `1499`); a comma that is not a thousands separator is kept (`13,5`)."""
    digits = ungrouped(digits)
    if "," in digits or "." not in digits:
        return digits
    try:
        value = Decimal(digits)
    except InvalidOperation:  # pragma: no cover - the callers' patterns only let digits through
        return digits
    return format(value.normalize(), "f")


def numeral(text: str, *, value: bool = True, short_decades: bool = False) -> str | None:
    """The token the number `text` reads as (digits with `.` or `,` between them and an optional
    ordinal or decade suffix), or None when `text` is not one: an ordinal is its number, a
    decade keeps its `s`; with `value` the decimal's value (`canonical`), else the digits as
    written without thousands separators; with `short_decades` a two-digit decade is the full one
    (`90s` -> `1990s`; module docstring for who asks which)."""
    found = _NUMERAL.fullmatch(text)
    if found is None:
        return None
    digits = canonical(found["digits"]) if value else ungrouped(found["digits"])
    if found["suffix"] != "s":
        return digits
    if short_decades and re.fullmatch(r"\d0", digits):
        return ("19" if int(digits) >= 30 else "20") + digits + "s"
    return digits + "s"


#: One number as an answer writes it, for the match checks: a sign not glued to a word (`x-1` is
#: no negative), thousands grouped by commas or digits alone, decimals, an exponent, a percent
#: sign. The lookbehind keeps `v2` and `3.4.5` from reading as numbers inside words; each part is
#: a bounded run, so the search is linear in the answer's length.
NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-+\u2212]?)"
    rf"(?P<int>{GROUPED}|\d+)?(?P<frac>\.\d+)?(?:[eE](?P<exp>[-+]?\d{{1,4}}))?(?P<percent>%?)"
    r"(?![\w])"
)


def parse_number(text: str) -> Decimal | None:
    """`text` as one number (`1,234.5`, `-3`, `6.8%`, `1.5e-3`), or None when it is not one."""
    found = NUMBER.fullmatch(text.strip())
    return None if found is None or not _has_digits(found) else _value(found)


def final_number(answer: str) -> tuple[str, Decimal] | None:
    """The answer's last number, as written and as a value; None when it holds none."""
    last = None
    for found in NUMBER.finditer(answer):
        if _has_digits(found):
            last = found
    if last is None:
        return None
    value = _value(last)
    return None if value is None else (last.group().strip(), value)


def _has_digits(found: re.Match[str]) -> bool:
    return bool(found.group("int") or found.group("frac"))


def _value(found: re.Match[str]) -> Decimal | None:
    sign = "-" if found.group("sign") in ("-", "\u2212") else ""
    digits = (found.group("int") or "0").replace(",", "") + (found.group("frac") or "")
    exponent = found.group("exp")
    try:
        return Decimal(f"{sign}{digits}" + (f"e{exponent}" if exponent else ""))
    except InvalidOperation:
        return None

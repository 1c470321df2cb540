"""The `match` checks an import writes for a source's mechanical comparisons on closed answers
(docs/language.md section 8.10): a number or a lone choice letter is read as one (`match number`,
`match choice`); a short text compared whole, as a prefix or as a substring becomes a `match regex`
of that text, escaped. None of them `decides`: an answer the check does not match goes to the
judge, as in the source it would have failed (add `decides` to keep the source's strictness)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...core.closed_match import ALL_LETTERS, MatchCheck
from ...core.numbers import parse_number

#: A character with a meaning in a pattern.
_META = re.compile(r"[\\.^$|?*+()\[\]{}]")
#: The white space RE2's `\s` reads (ASCII only): the only white space a check may put aside.
_ASCII_SPACE = " \t\r\n\f\v"
#: The longest text a text check is written for: a closed answer, not a paragraph.
MAX_CLOSED_CHARS = 200


def closed_check(gold: str, *, letters: bool = True) -> MatchCheck | None:
    """The check a closed gold gets: a number (`9.42`, `-3`, `1,000`) or, with `letters`, a lone
    upper-case choice letter (`B`, `(B)`; a lone `a` is more likely a word); None for any other."""
    text = gold.strip()
    if parse_number(text) is not None:
        return MatchCheck("number", text.replace(",", ""))
    if not letters:
        return None
    letter = text.strip("()").strip()
    if len(letter) == 1 and letter in ALL_LETTERS and text in (letter, f"({letter})"):  # upper case
        return MatchCheck("choice", letter)
    return None


def escaped(text: str) -> str:
    """`text` as a pattern that matches it literally: only RE2's metacharacters escaped, so the
    pattern stays readable in the rubric."""
    return _META.sub(r"\\\g<0>", text)


def text_check(texts: Sequence[str], *, how: str, ignore_case: bool = False) -> MatchCheck | None:
    """A regex check that the answer is one of `texts` (`how`: "whole", white space and a final
    `.` or `!` aside), starts with one ("prefix") or holds one ("substring"); None when a text is
    too long or spans lines to be a closed answer."""
    if not texts or any(len(t) > MAX_CLOSED_CHARS or "\n" in t or not t.strip(_ASCII_SPACE) for t in texts):
        return None
    choices = "|".join(escaped(t.strip(_ASCII_SPACE)) for t in texts)
    body = f"(?:{choices})" if len(texts) > 1 else choices
    pattern = {"whole": rf"\A\s*{body}[.!]?\s*\z", "prefix": rf"\A\s*{body}", "substring": body}[how]
    return MatchCheck("regex", ("(?i)" if ignore_case else "") + pattern)

"""How T1 rule v2 reads a text: words and numbers in order, each with its clause and what stands before it.

Rule v1 reads a text as a set of `\\w+` runs (`tiers.tokens`). Rule v2 (`t1_v2`) needs more: the
order of the words, numbers read as numbers, and where clauses end. `read(text)` gives the
casefolded NFKC text as a list of `Word`s:

- a number is one token, whatever separates its digits: `1,499.00` and `1499` are `1499`, `6.8`
  is `6.8` (never a piece: `8` is not in it), an ordinal is its number (`12th` is `12`), a decade
  keeps its `s` (`1920s` is not `1920`); a percent sign, `percent` or `per cent` is the token `%`
  (how a number reads is `numbers.numeral`, the home T1 shares with the match checks and the
  builtin judge);
- any other run of word characters is a word (`350Z`, `byWilliam`);
- punctuation is not a token, but `.`, `!`, `?`, `;`, `:` and line breaks end a clause (a full
  stop after an abbreviation, an initial or a first list number does not: `Dr. Avery`), and each
  word keeps the punctuation before it (`gap`), which is how a listed candidate is seen.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

from .numbers import PERCENT, PERCENT_WORDS, SUFFIX, numeral

#: A number (digits with `.` or `,` between digit runs; an ordinal or decade suffix), a percent
#: sign, or a run of word characters. A number glued to letters (`350Z`, `20111st`) is a word.
_TOKEN = re.compile(rf"(?P<num>\d+(?:[.,]\d+)*(?:{SUFFIX})?)(?!\w)|(?P<pct>%)|\w+")
#: What ends a clause between two tokens: a full stop, `!`, `?`, `;`, `:` or a line break.
_CLAUSE_END = re.compile(r"[.!?;:\n\u3002]")
#: What ends a sentence: a full stop, `!` or `?` before a space, or a line break.
_SENTENCE_END = re.compile(r"[.!?\u3002](?:\s|$)|\n")


#: A token of rule v1: a run of word characters (Unicode-aware, as Python's `\w`).
TOKEN = re.compile(r"\w+")


def tokens(text: str) -> frozenset[str]:
    r"""Rule v1's reading: the set of casefolded `\w+` runs in the NFKC form of `text`."""
    return frozenset(m.casefold() for m in TOKEN.findall(unicodedata.normalize("NFKC", text)))


class Word(NamedTuple):
    """One token of a text, its clause's number, and the text between it and the token before."""

    text: str
    clause: int
    gap: str
    sentence: int


#: Words a full stop shortens rather than ends a sentence after ("Dr. Avery", "Vol. 2", "Mapp v. Ohio").
ABBREVIATIONS = frozenset(
    re.findall(
        r"\w+",
        """dr mr mrs ms mx st jr sr mt ft vol vs v co inc ltd corp gen gov sen rep prof rev capt
        lt col sgt""",
    )
)


def _abbreviated(words: list[Word], gap: str) -> bool:
    """Whether the full stop in `gap` only shortens the word before it: an abbreviation, an initial
    (`E. coli`, `Junie B. Jones`, `U.S.`; not `a` or `i`), or the number of a list's first item
    (`1. Arizona`)."""
    if gap.strip() != ".":
        return False
    before = words[-1].text
    initial = len(before) == 1 and before.isalpha() and before not in "ai"
    return before in ABBREVIATIONS or initial or (len(words) == 1 and before.isdigit())


def read(text: str) -> list[Word]:
    """The tokens of `text` (NFKC, casefolded) in order: numbers as numbers, `%` for percent."""
    text = unicodedata.normalize("NFKC", text).casefold()
    words: list[Word] = []
    clause = sentence = 0
    end = 0
    for match in _TOKEN.finditer(text):
        gap = text[end : match.start()]
        end = match.end()
        if words and _CLAUSE_END.search(gap) and not _abbreviated(words, gap):
            clause += 1
            sentence += bool(_SENTENCE_END.search(gap))
        if match["num"] is not None:
            token = numeral(match["num"]) or match["num"]
        elif match["pct"] is not None:
            token = PERCENT
        else:
            token = match[0]
        if words and not gap.strip() and (words[-1].text, token) in PERCENT_WORDS:  # `per cent`
            words[-1] = words[-1]._replace(text=PERCENT)
            continue
        words.append(Word(PERCENT if (token,) in PERCENT_WORDS else token, clause, gap, sentence))
    return words


def texts(words: list[Word]) -> list[str]:
    """The tokens' texts alone."""
    return [w.text for w in words]

"""T1, the mechanical token-subset tier (docs/language.md section 8.1).

An answer passes T1 when the tokens of the gold answer, or of some accepted variant, are a
non-empty subset of the answer's tokens. T1 only ever passes: every other answer goes to the judge.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .compiled import CompiledQuestion

#: A token: a run of word characters (Unicode-aware, as Python's `\w`).
TOKEN = re.compile(r"\w+")


def tokens(text: str) -> frozenset[str]:
    """The set of casefolded `\\w+` runs in the NFKC form of `text`."""
    return frozenset(m.casefold() for m in TOKEN.findall(unicodedata.normalize("NFKC", text)))


def t1_passes(answer: str | frozenset[str], keys: Iterable[str | frozenset[str]]) -> bool:
    """True when some key's (gold or accepted variant) non-empty token set is within the answer's.

    Keys and the answer may be given as text or as token sets already computed (the runner
    computes each question's key tokens once).
    """
    answer_tokens = tokens(answer) if isinstance(answer, str) else answer
    for key in keys:
        key_tokens = tokens(key) if isinstance(key, str) else key
        if key_tokens and key_tokens <= answer_tokens:
            return True
    return False


class T1Keys:
    """The T1 keys of each question T1 may pass (its gold answer and each accepted variant) as
    token sets, made the first time a run asks for that question's: a battery of 200,000 questions
    costs nothing for the questions a run does not grade."""

    def __init__(self, enabled: bool) -> None:
        #: The battery's `t1`: False turns T1 off for every question.
        self.enabled = enabled
        self._made: dict[str, tuple[frozenset[str], ...]] = {}

    def of(self, question: CompiledQuestion) -> tuple[frozenset[str], ...] | None:
        """`question`'s keys as token sets; None when T1 may not pass it."""
        if not (self.enabled and question.t1):
            return None
        keys = self._made.get(question.id)
        if keys is None:
            keys = self._made[question.id] = tuple(tokens(k) for k in (question.gold, *question.accept))
        return keys

"""T1, the mechanical tier that only passes (docs/language.md section 8.1), under its named rules.

- Rule `v1` (SPEC section 4): an answer passes when the tokens of the gold answer, or of some
  accepted variant, are a non-empty subset of the answer's tokens.
- Rule `v2` (SPEC section 10, `t1_v2`): v1 narrowed to answers in which a key stands as the
  answer (together and in order, numbers read as numbers, not negated, hedged, listed among rival
  candidates or only echoing the question, in the answer's first sentence).

A battery names its rule in the manifest (`t1: {rule: v1}`); one that names none is graded by
`DEFAULT_T1_RULE`. Either way T1 only ever passes: every other answer goes to the judge.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .t1_reading import TOKEN, read, texts, tokens
from .t1_v2 import Key, objections, read_key

if TYPE_CHECKING:
    from .compiled import CompiledQuestion

__all__ = [
    "DEFAULT_T1_RULE",
    "T1_RULES",
    "TOKEN",
    "T1Keys",
    "rule_passes",
    "t1_passes",
    "t1_reason",
    "tokens",
]

#: The T1 rules a battery may name, oldest first.
T1_RULES = ("v1", "v2")
#: The rule of a battery that names none.
DEFAULT_T1_RULE = "v2"

_REASONS = {
    "v1": "T1: every token of the gold answer (or of an accepted variant) is in the answer",
    "v2": "T1 (rule v2): the gold answer (or an accepted variant) stands in the answer as its answer",
}


def t1_reason(rule: str) -> str:
    """The reason a T1 pass under `rule` records."""
    return _REASONS[rule]


def t1_passes(answer: str | frozenset[str], keys: Iterable[str | frozenset[str]]) -> bool:
    """Rule v1: true when some key's (gold or accepted variant) non-empty token set is within the
    answer's. Keys and the answer may be given as text or as token sets already computed (the
    runner computes each question's key tokens once)."""
    answer_tokens = tokens(answer) if isinstance(answer, str) else answer
    for key in keys:
        key_tokens = tokens(key) if isinstance(key, str) else key
        if key_tokens and key_tokens <= answer_tokens:
            return True
    return False


class V2Keys:
    """A question's keys as rule v2 reads them, with the words of its prompt (the `echo` rule)."""

    def __init__(self, gold: str, accept: Iterable[str], prompt: str) -> None:
        self.keys: tuple[Key, ...] = tuple(read_key(k) for k in (gold, *accept))
        self.prompt: frozenset[str] = frozenset(texts(read(prompt)))
        self.v1: tuple[frozenset[str], ...] = tuple(k.v1 for k in self.keys)

    def objections(self, answer: str) -> list[set[str]]:
        """For each key, the v2 rules that object to passing `answer` on it (`t1_v2.objections`)."""
        return objections(answer, self.keys, self.prompt)

    def passes(self, answer: str) -> bool:
        # v1's cheap set test first: most answers that fail it are most answers that v2 sends on.
        return t1_passes(answer, self.v1) and any(not found for found in self.objections(answer))


class T1Keys:
    """The T1 keys of each question T1 may pass (its gold answer and each accepted variant), read
    by the battery's rule the first time a run asks for that question's: a battery of 200,000
    questions costs nothing for the questions a run does not grade."""

    def __init__(self, enabled: bool, rule: str = DEFAULT_T1_RULE) -> None:
        #: The battery's `t1`: False turns T1 off for every question.
        self.enabled = enabled
        #: The battery's T1 rule (`T1_RULES`), recorded on each T1 pass.
        self.rule = rule
        self._made: dict[str, tuple[frozenset[str], ...] | V2Keys] = {}

    def of(self, question: CompiledQuestion) -> tuple[frozenset[str], ...] | V2Keys | None:
        """`question`'s keys as the rule reads them (v1: token sets); None when T1 may not pass it."""
        if not (self.enabled and question.t1):
            return None
        keys = self._made.get(question.id)
        if keys is None:
            keys = self._made[question.id] = (
                V2Keys(question.gold, question.accept, question.prompt)
                if self.rule == "v2"
                else tuple(tokens(k) for k in (question.gold, *question.accept))
            )
        return keys

    def passes(self, question: CompiledQuestion, answer: str) -> bool:
        """Whether T1 passes `answer` to `question` under the battery's rule."""
        keys = self.of(question)
        if keys is None:
            return False
        return keys.passes(answer) if isinstance(keys, V2Keys) else t1_passes(answer, keys)


def rule_passes(rule: str, answer: str, *, gold: str, accept: Iterable[str], prompt: str) -> bool:
    """Whether T1 under `rule` would pass `answer` to a question of that gold, accepted variants and
    prompt, T1 on (lint, benches); grading asks its `T1Keys`, which reads each question once."""
    if rule == "v2":
        return V2Keys(gold, accept, prompt).passes(answer)
    return t1_passes(answer, (gold, *accept))

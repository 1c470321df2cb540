"""T1 respects the trap (docs/language.md section 8.1): the trap's own words send an answer to the judge.

T1 passes an answer that holds every token of the gold. An answer can hold them all and still
make the very claim the question's `trap` warns of ("blob, tree, commit and tag, plus the branch
object", where the trap says there is no branch object). The trap's own words are its tokens that
neither the gold, the accepted variants nor the question's prompt have: an answer carrying one of
them is not passed by T1 but goes to the judge, who reads the trap. T1 still never fails an answer.

The words are found when the battery is compiled and carried on each `CompiledQuestion`, so
grading needs no rubric. The manifest's `t1_trap: false` turns this off for a battery.
"""

from __future__ import annotations

from collections.abc import Iterable

from .tiers import tokens


def trap_words(trap: str | None, *, gold: str, accept: Iterable[str], prompt: str) -> tuple[str, ...]:
    """The tokens of `trap` that the gold, the accepted variants and the prompt do not have, sorted;
    empty when there is no trap."""
    if not trap:
        return ()
    known = tokens(gold) | tokens(prompt)
    for variant in accept:
        known |= tokens(variant)
    return tuple(sorted(tokens(trap) - known))


def carried_trap_words(answer: str | frozenset[str], words: frozenset[str]) -> list[str]:
    """The trap words (`trap_words`, as a set) that `answer` (text or its tokens) carries, sorted."""
    if not words:
        return []
    answer_tokens = tokens(answer) if isinstance(answer, str) else answer
    return sorted(words & answer_tokens)

"""What a trap says, and T1's respect for it (docs/language.md section 8.1).

A trap (`trap "..."`) states the truth that exposes a trapped answer: what does not exist, or what
is false, that such an answer would assert ("There is no Summarize stage."). An answer asserting
the false thing fails. `states_truth` tells a trap written that way from one that reads as the
false claim itself ("The pipeline has a Summarize stage."), which lint warns of.

T1 passes an answer that holds every token of the gold. An answer can hold them all and still
make the very claim the trap exposes ("blob, tree, commit and tag, plus the branch object", where
the trap says there is no branch object). The trap's own words are its tokens that are not the
wording of a denial ("there", "is", "no", ...) and that neither the gold, the accepted variants nor
the question's prompt have: an answer carrying one of them is not passed by T1 but goes to the
judge, who reads the trap. T1 still never fails an answer.

The words are found when the battery is compiled and carried on each `CompiledQuestion`, so
grading needs no rubric. The manifest's `t1_trap: false` turns this off for a battery.
"""

from __future__ import annotations

from collections.abc import Iterable

from .tiers import tokens


def _wordlist(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Words that say a thing is not so, as tokens (`isn't` is `isn` and `t`): a trap with none of them
#: reads as the false claim itself.
DENIAL_WORDS: frozenset[str] = _wordlist(
    """not no never none nor neither without cannot isn aren wasn weren doesn don didn hasn haven
    hadn won can t false untrue incorrect wrong myth misconception nonexistent only instead rather
    actually unlike"""
)

#: The wording a trap states its truth in, never distinctive of an answer: denials, articles,
#: copulas and auxiliaries, and the little words around them.
FRAMING_WORDS: frozenset[str] = DENIAL_WORDS | _wordlist(
    """there here it its this that these those a an the is are was were be been being has have had
    does do did exist exists existed s of in on at to for with by as and or but any such so true
    fact called named"""
)


def states_truth(trap: str) -> bool:
    """True when `trap` is worded as a truth that denies something (it has a word of
    `DENIAL_WORDS`); False when it reads as a bare claim, as the false claim itself would."""
    return bool(tokens(trap) & DENIAL_WORDS)


def trap_words(trap: str | None, *, gold: str, accept: Iterable[str], prompt: str) -> tuple[str, ...]:
    """The tokens of `trap` that are not `FRAMING_WORDS` and that the gold, the accepted variants and
    the prompt do not have, sorted; empty when there is no trap."""
    if not trap:
        return ()
    known = tokens(gold) | tokens(prompt) | FRAMING_WORDS
    for variant in accept:
        known |= tokens(variant)
    return tuple(sorted(tokens(trap) - known))


def carried_trap_words(answer: str | frozenset[str], words: frozenset[str]) -> list[str]:
    """The trap words (`trap_words`, as a set) that `answer` (text or its tokens) carries, sorted."""
    if not words:
        return []
    answer_tokens = tokens(answer) if isinstance(answer, str) else answer
    return sorted(words & answer_tokens)

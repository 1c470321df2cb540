"""T1 defers to the judge when an answer carries the trap's own words (`core.trap_words`).

The words come compiled on each question (`CompiledQuestion.trap_words`, empty with the manifest's
`t1_trap: false`); here they are made sets once per run, and an answer T1 would pass is checked
against them. Such an answer is graded by the judge as any T2 answer, and its record says why in
`warnings` (`t1_deferred`), so a T1 audit or a person can see what the check changed.
"""

from __future__ import annotations

from ..core.compiled import CompiledQuestion
from ..core.trap_words import carried_trap_words

#: The start of the warning a record carries when T1 deferred to the judge (`t1_deferred`).
T1_DEFERRED = "T1 deferred to the judge: the answer carries the trap's own words"


def t1_deferred(words: list[str]) -> str:
    """The warning of a T1 pass deferred to the judge, naming the trap words the answer carries."""
    return f"{T1_DEFERRED}: {', '.join(words)}"


class TrapCheck:
    """The trap words of each question T1 may pass, as sets, each made the first time the run asks
    for its question's."""

    def __init__(self) -> None:
        self._words: dict[str, frozenset[str]] = {}

    def carried(self, answer: str, question: CompiledQuestion) -> list[str]:
        """The trap words of `question` that `answer` carries, sorted; empty when none."""
        if not (question.trap_words and question.t1):
            return []
        words = self._words.get(question.id)
        if words is None:
            words = self._words[question.id] = frozenset(question.trap_words)
        return carried_trap_words(answer, words)

"""A compiled battery: everything grading needs, as plain values.

`render.compile_battery` produces it; the runtime (tiers, judges, runner) consumes it and so never
imports Lark or Jinja2. The USER and STERN prompts are `Frame`s: the scorer's template rendered
once around a sentinel and split, so filling in an answer is two string joins, exactly equal to
rendering the template with that answer.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from .closed_match import MatchCheck
from .nodes import Exemplar, JudgeDefaults
from .reasoning import DEFAULT_REASONING_TAGS
from .scorer import ScorerSettings
from .tiers import DEFAULT_T1_RULE


class Frame(msgspec.Struct, frozen=True):
    """A prompt with one hole for the candidate answer."""

    prefix: str
    suffix: str

    def fill(self, answer: str) -> str:
        return self.prefix + answer + self.suffix


class CompiledQuestion(msgspec.Struct, frozen=True):
    """One question ready to grade: its exact SYSTEM prompt and what T1 needs."""

    id: str
    system: str
    sha256: str
    gold: str
    accept: tuple[str, ...] = ()
    t1: bool = True
    exemplars: tuple[Exemplar, ...] = ()
    #: The question's `tags`, copied into each record graded (not part of any prompt or its sha256).
    tags: tuple[str, ...] = ()
    #: The trap's own words (`trap_words`): an answer carrying one goes to the judge, not T1's pass.
    #: Empty without a trap or with the manifest's `t1_trap: false`.
    trap_words: tuple[str, ...] = ()
    #: The question's prompt: T1 rule v2 sends on an answer whose key only echoes it.
    prompt: str = ""
    #: The question's `match` check of a closed answer, run after T1 (never part of a prompt).
    match: MatchCheck | None = None


class CompiledBattery(msgspec.Struct, frozen=True):
    """A battery compiled under its scorer, with the scorer's checked `settings`."""

    name: str
    scorer: str
    #: Id -> question, in the battery's order: a dict when compiled, a `kept_questions.KeptQuestions`
    #: when read from the compile cache (each question decoded when first asked for).
    questions: Mapping[str, CompiledQuestion]
    user: Frame
    stern: Frame
    settings: ScorerSettings
    t1: bool = True
    judge: JudgeDefaults = JudgeDefaults()
    #: The open/close pairs of the reasoning blocks cut from an answer before it is graded (the
    #: manifest's `reasoning_tags`, or `grade --reasoning-tags`); empty: nothing is cut.
    reasoning_tags: tuple[tuple[str, str], ...] = DEFAULT_REASONING_TAGS
    #: The manifest's `t1_trap`: T1 defers to the judge when an answer carries the trap's words.
    t1_trap: bool = True
    #: The manifest's T1 rule (`tiers.T1_RULES`): how T1 decides a pass.
    t1_rule: str = DEFAULT_T1_RULE

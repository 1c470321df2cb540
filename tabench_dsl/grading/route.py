"""The route of an answer: which tier decides it and how often the judge is asked, the one rule the
grading loop (`runner.Grader`) follows and the dry run (`estimate`) counts.

For an answer's final text (its reasoning blocks cut: `core.reasoning`):

    over `max_answer_bytes` of UTF-8        -> OVERSIZED: a person decides; no T1, no judge call
    T1 passes, carrying the trap's words    -> TRAP: the judge decides, asked once (`trap_check`)
    T1 passes, in the `--t1-audit` share    -> AUDIT: the T1 pass stands, the judge is asked once
                                               and its verdict kept beside it (`shards.audit_share`)
    T1 passes                               -> T1: no judge call
    the question's `match` check reads a
      verdict (`core.closed_match`)         -> MATCH: no judge call (a pass in the `--t1-audit`
                                               share: MATCH_AUDIT, the judge asked once beside it)
    else                                    -> JUDGE: the judge decides, each `--repeat` ask

An oversized answer is not tried against T1: the longer an answer, the likelier it holds every gold
token by chance (or by stuffing).
"""

from __future__ import annotations

import enum

import msgspec

from ..core.closed_match import MatchReading, read_answer
from ..core.compiled import CompiledBattery, CompiledQuestion
from ..core.tiers import T1Keys
from .shards import audit_share
from .trap_check import TrapCheck

#: Answers longer than this many bytes of UTF-8 are not sent to the judge (`--max-answer-bytes`).
MAX_ANSWER_BYTES = 256 * 1024


class Route(enum.Enum):
    """Which tier decides an answer (module docstring)."""

    OVERSIZED = "oversized"
    TRAP = "trap"
    AUDIT = "audit"
    T1 = "t1"
    MATCH = "match"
    MATCH_AUDIT = "match_audit"
    JUDGE = "judge"


class Routed(msgspec.Struct, frozen=True):
    """An answer's route, with the trap words a T1 pass carries (for the warning of a TRAP) and
    what a match check read (MATCH, MATCH_AUDIT)."""

    route: Route
    carried: list[str] = msgspec.field(default_factory=list)
    reading: MatchReading | None = None


def oversize(text: str, limit: int) -> int | None:
    """The size of `text` in bytes of UTF-8 when it is over `limit`, else None. A text of at most
    limit/4 characters cannot be over it (4 bytes a character at most): most answers are never
    encoded."""
    if len(text) * 4 <= limit:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    return size if size > limit else None


class Router:
    """Routes the answers of one battery (module docstring); `t1_audit` is the share of T1 passes
    the judge also grades (`--t1-audit`)."""

    def __init__(
        self, battery: CompiledBattery, *, max_answer_bytes: int = MAX_ANSWER_BYTES, t1_audit: float = 0.0
    ) -> None:
        self.max_answer_bytes = max_answer_bytes
        self.t1_audit = t1_audit
        self._t1_keys = T1Keys(battery.t1, battery.t1_rule)
        #: The battery's T1 rule, which every T1 pass records.
        self.t1_rule = self._t1_keys.rule
        self._trap = TrapCheck()

    def route(self, system: str, question: CompiledQuestion, final: str) -> Routed:
        """The route of system `system`'s answer to `question` whose final text is `final`."""
        if oversize(final, self.max_answer_bytes) is not None:
            return Routed(Route.OVERSIZED)
        if not self._t1_keys.passes(question, final):
            return self._matched(system, question, final)
        carried = self._trap.carried(final, question)
        if carried:
            return Routed(Route.TRAP, carried=carried)
        return Routed(Route.AUDIT if self._audited(system, question) else Route.T1)

    def _matched(self, system: str, question: CompiledQuestion, final: str) -> Routed:
        """The route of an answer T1 does not pass: its question's match check's, when the check
        reads a verdict in it, else the judge's."""
        if question.match is None:
            return Routed(Route.JUDGE)
        reading = read_answer(question.match, final)
        if reading.verdict is None:
            return Routed(Route.JUDGE)
        audited = reading.verdict == "pass" and self._audited(system, question)
        return Routed(Route.MATCH_AUDIT if audited else Route.MATCH, reading=reading)

    def _audited(self, system: str, question: CompiledQuestion) -> bool:
        """Whether a mechanical pass of `system`'s answer to `question` is in the `--t1-audit` share."""
        return self.t1_audit > 0 and audit_share(system, question.id) < self.t1_audit

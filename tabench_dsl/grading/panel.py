"""Judge panels: several judges grade each T2 answer, and a rule turns their votes into one verdict.

Each judge of a panel grades on its own, with the full semantics of a single judge (format re-ask,
one stern retry, its own adjudicate), so its vote is one of pass, fail, adjudicate or error
(`records.PanelVote`). The panel's verdict, by `rule`:

    majority    the verdict of a strict majority of the judges that gave pass or fail; a tie (or no
                judge that gave pass or fail) ends adjudicate, cause `panel_split`
    unanimous   the verdict every judge gave; any other outcome (a judge that disagrees, or that
                gave adjudicate or error) ends adjudicate, cause `panel_split`

Decided where the issue is silent:
- when every judge ended `error` (no usable reply from any), the panel's record is `error`, its
  cause the one the judges' votes share (`rate_limit` when every judge ran out the rate-limit
  wait), else `transport`, so `--resume` grades the answer again, as it does for a single judge;
- under `majority`, a judge that ended adjudicate or error is left out of the count: two judges
  saying pass and one whose replies were malformed is a pass, 2 of 2;
- the panel's reason is the first agreeing judge's reason (each judge's own is in its vote), and a
  facet counts as observed when a strict majority of the agreeing judges observed it;
- a panel may not hold the same judge twice (same backend, endpoint, model and parameters): its
  replies would share one set of cache entries, and its vote would count twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from ..core.errors import UsageError
from ..core.records import Cause, JudgeInfo, Outcome, PanelVote
from .judges.base import Judge

Rule = Literal["majority", "unanimous"]
#: The rules a panel may use, in the order hints list them.
RULES: tuple[str, ...] = ("majority", "unanimous")
#: The backend name a panel's `JudgeInfo` carries.
PANEL_BACKEND = "panel"


class PanelVerdict(msgspec.Struct, frozen=True):
    """The panel's outcome for one answer: the verdict, why (`cause` for adjudicate or error), the
    reason shown, and the facets the agreeing judges observed."""

    verdict: Outcome
    reason: str
    cause: Cause | None = None
    facets: dict[str, bool] = msgspec.field(default_factory=dict)


class Panel:
    """Several judges grading every T2 answer, and the rule that combines their votes.

    It stands where a single `Judge` stands for the `Grader` and its callers: `info` names the
    panel in every record (backend `panel`, the members' names as the model, the rule as the label),
    `aclose` closes every member."""

    def __init__(self, members: Sequence[Judge], rule: Rule = "majority") -> None:
        if len(members) < 2:
            raise UsageError("a judge panel needs at least two judges")
        if rule not in RULES:
            raise UsageError(f"unknown panel rule {rule!r}; use one of: {', '.join(RULES)}")
        seen: dict[tuple, str] = {}
        for judge in members:
            identity = (judge.info.backend, judge.info.endpoint, judge.params)
            if identity in seen:
                raise UsageError(
                    f"the judge panel names {judge.info.describe()} twice: each judge may sit on a panel once"
                )
            seen[identity] = judge.info.describe()
        self.members: tuple[Judge, ...] = tuple(members)
        self.rule: Rule = rule
        self.info = JudgeInfo(
            backend=PANEL_BACKEND,
            model=" + ".join(judge.info.describe() for judge in members),
            language_model=any(judge.info.language_model for judge in members),
            label=f"panel ({rule})",
        )

    async def aclose(self) -> None:
        """Close every member, even when one fails to close."""
        failure: BaseException | None = None
        for judge in self.members:
            try:
                await judge.aclose()
            except Exception as exc:  # the others must still be closed
                failure = failure or exc
        if failure is not None:
            raise failure


def decide(votes: Sequence[PanelVote], rule: Rule) -> PanelVerdict:
    """The panel's verdict from its judges' votes, by `rule` (see the module docstring)."""
    if votes and all(vote.verdict == "error" for vote in votes):
        # The votes' own cause when they share one (every judge ran out the rate-limit wait:
        # `rate_limit`, as a single judge records it), else the general one.
        causes = {vote.cause for vote in votes}
        shared = causes.pop() if len(causes) == 1 else None
        return PanelVerdict("error", votes[0].reason, cause=shared or "transport")
    decided = [vote for vote in votes if vote.verdict in ("pass", "fail")]
    passes = sum(1 for vote in decided if vote.verdict == "pass")
    fails = len(decided) - passes
    winner: Outcome | None = None
    if rule == "unanimous":
        if len(decided) == len(votes) and (passes == 0 or fails == 0):
            winner = decided[0].verdict
    elif passes * 2 > len(decided):
        winner = "pass"
    elif fails * 2 > len(decided):
        winner = "fail"
    if winner is None:
        return PanelVerdict("adjudicate", split_reason(votes, rule), cause="panel_split")
    agreeing = [vote for vote in decided if vote.verdict == winner]
    facets: dict[str, bool] = {}
    for name in dict.fromkeys(name for vote in agreeing for name in vote.facets):
        facets[name] = sum(1 for vote in agreeing if vote.facets.get(name)) * 2 > len(agreeing)
    return PanelVerdict(winner, agreeing[0].reason, facets=facets)


def split_reason(votes: Sequence[PanelVote], rule: Rule) -> str:
    """The reason a split panel's record carries: each judge and its vote, for the person who decides."""
    each = "; ".join(f"{vote.judge.describe()}: {vote.verdict}" for vote in votes)
    return f"the panel split ({rule}): {each}"

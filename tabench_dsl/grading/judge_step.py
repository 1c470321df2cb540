"""The judge's part of grading a T2 answer (docs/language.md section 8): the first ask, the format
re-ask after a malformed reply, the stern retry after a fail with a pass-shaped reason, and the
record each ending makes; with a judge `Panel`, every judge of it does all that at once and
`panel.decide` turns their votes into the verdict."""

from __future__ import annotations

import asyncio
import functools

import msgspec

from ..core.compiled import CompiledBattery, CompiledQuestion
from ..core.records import Answer, Attempt, PanelVote, Record
from .asking import Asked, Asker
from .contradiction import ContradictionCheck
from .judges.base import Judge, Message
from .panel import Panel, decide
from .record_maker import RecordMaker
from .reply_endings import twice_malformed
from .verdict import Verdict

#: The warning a pass with a fail-shaped reason carries.
FAIL_SHAPED_PASS = "pass verdict with a fail-shaped reason"


class JudgeStep:
    """Asks the run's judge (`judge`: one, or a `Panel`) about T2 answers through `asker`, and
    makes their records with `records`."""

    def __init__(
        self, battery: CompiledBattery, judge: Judge | Panel, asker: Asker, records: RecordMaker
    ) -> None:
        self.battery = battery
        self.judge = judge
        self.asker = asker
        self.records = records
        self.contradiction = ContradictionCheck.from_settings(battery.settings.contradiction)

    async def grade_t2(self, answer: Answer, question: CompiledQuestion) -> Record:
        """The judge's record of a T2 answer: the one judge's, or the panel's, whose judges are
        asked at once, each with the full semantics of `judge_t2`."""
        if not isinstance(self.judge, Panel):
            return await self.judge_t2(self.judge, answer, question)
        panel = self.judge
        tasks = [asyncio.ensure_future(self.judge_t2(m, answer, question)) for m in panel.members]
        try:
            judged = await asyncio.gather(*tasks)
        except BaseException:  # a fatal judge error (or Ctrl-C): the other judges are not waited for
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        votes = [
            PanelVote(
                judge=one.judge,
                verdict=one.verdict,
                reason=one.reason,
                cause=one.cause,
                facets=one.facets,
                attempts=one.attempts,
                tolerated=one.tolerated,
                warnings=one.warnings,
            )
            for one in judged
        ]
        verdict = decide(votes, panel.rule)
        tolerated = list(dict.fromkeys(form for vote in votes for form in vote.tolerated))
        warnings = [f"{vote.judge.describe()}: {w}" for vote in votes for w in vote.warnings]
        record = self.records.make(
            answer,
            question,
            verdict=verdict.verdict,
            reason=verdict.reason,
            cause=verdict.cause,
            facets=verdict.facets,
            tolerated=tolerated,
            warnings=warnings,
        )
        return msgspec.structs.replace(record, panel=votes)

    async def judge_t2(
        self, judge: Judge, answer: Answer, question: CompiledQuestion, repetition: int = 0
    ) -> Record:
        """One judge's record of a T2 answer: the first ask, the format re-ask, the stern retry
        (`repetition` numbers a `--repeat` ask, which has cache entries of its own)."""
        system = Message("system", question.system)
        messages = [system, Message("user", self.battery.user.fill(answer.answer))]
        attempts: list[Attempt] = []
        tolerated: list[str] = []
        made = functools.partial(
            self.records.make,
            answer,
            question,
            judge=judge.info,
            attempts=attempts,
            tolerated=tolerated,
        )
        ask = functools.partial(self.asker.ask, judge, attempts=attempts, tolerated=tolerated)

        asked = await ask("first", messages, repetition=repetition)
        if asked.decoded is not None and asked.decoded.verdict is None:
            asked = await ask("format", messages, repetition=repetition)
            if asked.decoded is not None and asked.decoded.verdict is None:
                cause, reason = twice_malformed(asked.attempt, asked.decoded.problem)
                return made(verdict="adjudicate", cause=cause, reason=reason)
        if asked.decoded is None:
            return self._error(made, asked)
        assert asked.decoded.verdict is not None  # settled above
        verdict = asked.decoded.verdict
        if self._contradicts(verdict):
            stern = [system, Message("user", self.battery.stern.fill(answer.answer))]
            asked = await ask("stern", stern, repetition=repetition)
            if asked.decoded is None:
                return self._error(made, asked)
            again = asked.decoded.verdict
            if again is None or self._contradicts(again):
                if again is not None:
                    reason = again.reason
                else:
                    reason = f"malformed stern reply: {asked.decoded.problem}"
                return made(verdict="adjudicate", cause="contradiction", reason=reason)
            verdict = again
        warnings = []
        if verdict.verdict == "pass" and self.contradiction.is_fail_shaped(verdict.reason):
            warnings.append(FAIL_SHAPED_PASS)
        return made(
            verdict=verdict.verdict,
            reason=verdict.reason,
            facets=dict(verdict.facets),
            warnings=warnings,
        )

    def _contradicts(self, verdict: Verdict) -> bool:
        return verdict.verdict == "fail" and self.contradiction.is_pass_shaped(verdict.reason)

    @staticmethod
    def _error(made: functools.partial[Record], asked: Asked) -> Record:
        """The record of an answer whose ask ended without a reply to decode."""
        if asked.ended is not None:  # the judge answered, but never within its budget
            return made(verdict="adjudicate", cause=asked.ended, reason=asked.reason)
        return made(
            verdict="error",
            cause="rate_limit" if asked.rate_limited else "transport",
            reason=asked.attempt.error or "",
        )

"""The results records a grading writes, made in one place: the answer, its question's prompt
hash and tags, the battery and its scorer, the judge, the time, and whether the answer looks like a
prompt injection (the scorer's `injection` patterns)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

from ..core.compiled import CompiledBattery, CompiledQuestion
from ..core.records import Answer, Attempt, Cause, JudgeInfo, Outcome, Record, Tier
from .injection import compile_injection

_clock: list = [0, ""]  # [whole second, its ISO text]: records finishing in one second share it


def now() -> str:
    """The time in UTC to the second, ISO 8601 (formatted once per second, not once per record)."""
    second = int(time.time())
    if second != _clock[0]:
        _clock[0] = second
        _clock[1] = datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds")
    return _clock[1]


class RecordMaker:
    """Makes the records of one grading of `battery`; `judge` is the run's judge, which a record
    carries unless it names another (a panel's member)."""

    def __init__(self, battery: CompiledBattery, judge: JudgeInfo) -> None:
        self.battery_name = battery.name
        self.scorer = battery.scorer
        self.judge = judge
        # The injection patterns as one regex, compiled once for the run (None: no patterns).
        self._injection: Any | None = compile_injection(battery.settings.injection)

    def injection_suspect(self, text: str) -> bool:
        """Whether `text` matches one of the scorer's injection patterns."""
        return self._injection is not None and self._injection.search(text) is not None

    def make(
        self,
        answer: Answer,
        question: CompiledQuestion,
        *,
        verdict: Outcome,
        reason: str,
        judge: JudgeInfo | None = None,
        tier: Tier = "t2",
        cause: Cause | None = None,
        facets: dict[str, bool] | None = None,
        attempts: list[Attempt] | None = None,
        tolerated: list[str] | None = None,
        warnings: list[str] | None = None,
    ) -> Record:
        """The record of `answer` to `question`, stamped with the battery, its scorer, a judge and the
        time."""
        return Record(
            system=answer.system,
            question=answer.question,
            tier=tier,
            verdict=verdict,
            reason=reason,
            prompt_sha256=question.sha256,
            judge=judge or self.judge,
            answer=answer.answer,
            facets=facets or {},
            cause=cause,
            attempts=attempts or [],
            tolerated=tolerated or [],
            warnings=warnings or [],
            injection_suspect=self.injection_suspect(answer.answer),
            battery=self.battery_name,
            time=now(),
            tags=list(question.tags),
            scorer=self.scorer,
        )

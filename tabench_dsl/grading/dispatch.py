"""The order answers go to the judge in: grouped by question, so that the provider's prompt cache
holds a question's SYSTEM while most of that question's answers are graded.

Every answer to one question is judged under the same SYSTEM prompt (rules, policies, question,
gold, exemplars), most of a request's tokens. Providers serve a prefix they answered recently from
their prompt cache at a fraction of the price (`judges.openai`, `judges.anthropic`), but an answers
file usually runs system by system: graded in file order, a question comes back only after every
other question, long after its prefix left the cache. And a prefix is in the cache only once a
request with it has been answered: answers of one question sent together all miss.

So `QuestionOrder` hands out answers this way:

- answers are read ahead into a window and queued per question, questions in the order they first
  appear;
- a question is *cold* until a fresh judge reply for it came back: its first answer goes alone (its
  *opener*) and its other answers wait;
- a question is *warm* once a graded answer of it carries a reply the judge sent (not one from the
  reply cache): its answers then go before any other question's, oldest warm question first, so a
  question's answers go in one burst while its prefix is fresh;
- the next cold question's opener goes as soon as the answers in sight (those of warm questions,
  and those waiting behind openers out: `_promised`) are fewer than `open_ahead` times the
  concurrency (`SINGLE_PROCESS_OPEN_AHEAD`), so other questions keep the concurrency full and a
  question's reply is back before the warm ones run dry; but no sooner: opening more questions at
  once than their answers can follow would have the provider hold more prefixes than it keeps
  (measured, bench/prompt_cache_bench.py: at concurrency 64 against a cache of 16 prefixes,
  opening a question for every free slot served 14% of the cacheable requests from the cache, this
  rule 100%). The cost is at the start: a few openers out, the other slots wait one round trip;
- an opener that ends without a fresh reply (a T1 pass, an oversized answer, a reply-cache hit, a
  transport failure) leaves its question cold: its next answer opens it;
- a question cools again `WARM_SECONDS` after its last fresh reply (providers keep an entry for
  minutes after its last use), so a window read much later opens it again before sending the rest.

Warmth is learnt from finished records (`finished`), the same in one process (`Grader.run`) and in
the `--workers` parent (`parallel.pool`), which alone decides the order and hands answers to the
workers as they are let go. Results are still appended as each answer finishes.

Memory: grouping needs the answers ahead, so the window holds up to `WINDOW_ANSWERS` answers and
`WINDOW_CHARS` characters of answer text (about 100 MB at most; `AnswerReader` itself holds one
record at a time). A file within that is grouped whole; a larger one window by window, a window
being topped up as answers leave it. Answers skipped as done (`--resume`) never enter it.

`FileOrder` is the order without grouping, for `judge: {prompt_cache: false}` and for judges that
have no prompt cache (builtin, replay: `JudgeInfo.deterministic`): file order, as it always was.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from ..core.compiled import CompiledBattery
from ..core.records import Answer, Record

#: The most answers read ahead for grouping ...
WINDOW_ANSWERS = 100_000
#: ... and the most characters of answer text among them.
WINDOW_CHARS = 64 << 20
#: `open_ahead` for one grading process, whose answers handed out are the calls in flight: a next
#: question opens while fewer than 1.5 x the concurrency answers are in sight. At 1.0 the slots
#: behind an opener's round trip stood idle (bench/prompt_cache_bench.py, 100 questions x 20
#: systems at concurrency 64: about 31 calls in flight against 50 in file order); at 3.0 more
#: questions were open than a 16-prefix cache holds (28% served from it). At 1.5: about 50 in
#: flight and 100% served. The `--workers` parent passes its workers' buffers (twice their share
#: of the concurrency) as the concurrency, which already looks that far ahead: it keeps 1.0.
SINGLE_PROCESS_OPEN_AHEAD = 1.5
#: Seconds after its last fresh reply that a question counts as still in the provider's cache
#: (Anthropic's ephemeral entries live five minutes from their last use; OpenAI's five to ten).
WARM_SECONDS = 300.0


def groups_by_question(battery: CompiledBattery, *, deterministic: bool) -> bool:
    """Whether answers go grouped by question: unless the manifest says `judge: {prompt_cache:
    false}`, or the judge has no prompt cache to fill (`deterministic`: builtin, replay)."""
    return battery.judge.prompt_cache is not False and not deterministic


def replied_fresh(record: Record) -> bool:
    """Whether grading `record` got a reply from the judge itself (not the reply cache): then the
    provider has seen its SYSTEM."""
    return any(a.raw is not None and not a.cache_hit for a in record.attempts)


class FileOrder:
    """Answers in file order (no grouping): the same interface as `QuestionOrder`."""

    def __init__(self, answers: Iterable[Answer]) -> None:
        self._answers = iter(answers)

    def take(self) -> Answer | None:
        """The next answer, or None when there are none left."""
        return next(self._answers, None)

    @property
    def held(self) -> bool:
        """Never: in file order no answer waits for another."""
        return False

    async def next(self) -> Answer | None:
        """The next answer, or None when there are none left."""
        return next(self._answers, None)

    def finished(self, record: Record) -> None:
        """Nothing to learn: file order does not depend on replies."""

    def dropped(self, answer: Answer) -> None:
        """Nothing to learn: file order does not depend on replies."""


#: Where a question stands (`QuestionOrder._state`): answers queued, its opener may go (COLD); its
#: opener is out at the judge (OPENING); warm, answers queued that may go (READY). A question with
#: none of these has no answers queued and no opener out.
COLD, OPENING, READY = "cold", "opening", "ready"


class QuestionOrder:
    """Answers grouped by question, each question's first answer alone until its reply is back (the
    module docstring). Used by one event loop: `take`/`next` hand out answers, `finished` reports
    each graded one.

    `concurrency` is how many answers may be out at once (the workers pulling from it);
    `open_ahead` how many answers in sight, as a multiple of it, hold the next question back
    (`SINGLE_PROCESS_OPEN_AHEAD`); `clock` gives seconds (monotonic), for the warm window; tests
    pass their own.
    """

    def __init__(
        self,
        answers: Iterable[Answer],
        *,
        concurrency: int = 8,
        open_ahead: float = 1.0,
        window_answers: int = WINDOW_ANSWERS,
        window_chars: int = WINDOW_CHARS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source: Iterator[Answer] | None = iter(answers)
        self._window_answers = window_answers
        self._window_chars = window_chars
        self._concurrency = max(1, concurrency)
        #: No question opens while this many answers are in sight (`_promised`).
        self._open_ahead = open_ahead * self._concurrency
        self._clock = clock
        #: Answers read and not yet handed out, per question (a question with none has no entry).
        self._queued: dict[str, deque[Answer]] = {}
        self._count = 0
        self._chars = 0
        self._state: dict[str, str] = {}
        #: READY questions, oldest warm first, and COLD ones in the order they appeared. An entry
        #: whose question has moved on since is skipped when it comes up.
        self._ready: deque[str] = deque()
        self._cold: deque[str] = deque()
        #: question -> when its last fresh reply came back.
        self._warm: dict[str, float] = {}
        #: question -> the (system, question) of its opener out at the judge.
        self._openers: dict[str, tuple[str, str]] = {}
        #: Answers queued for READY and OPENING questions: those that may go now or once an opener
        #: out is back. No question is opened while they fill the concurrency.
        self._promised = 0
        self._changed: asyncio.Event | None = None

    # -- handing out ---------------------------------------------------------------------------

    def take(self) -> Answer | None:
        """The next answer that may go now, or None: when `held` is true, answers wait for an
        opener's reply (ask again after `finished`); otherwise every answer was handed out."""
        self._fill()
        state = self._state
        # A question opens as soon as the answers in sight no longer fill the concurrency, before
        # the warm ones run dry: its reply is then back by the time they have gone.
        while self._cold and self._promised < self._open_ahead:
            question = self._cold.popleft()
            if state.get(question) != COLD:
                continue  # moved on since it was listed
            answer = self._open(question)
            self._promised += len(self._queued.get(question, ()))
            return answer
        while self._ready:
            question = self._ready[0]
            if state.get(question) != READY:
                self._ready.popleft()  # moved on since it was listed
                continue
            self._promised -= 1
            if not self._is_warm(question):
                # Cooled while its answers waited: the next one opens it again, alone.
                self._ready.popleft()
                return self._open(question)
            answer = self._pop(question)
            if question not in self._queued:
                self._ready.popleft()
                del state[question]
            return answer
        return None

    @property
    def held(self) -> bool:
        """Whether answers are queued that wait for an opener's reply."""
        return bool(self._queued)

    async def next(self) -> Answer | None:
        """The next answer that may go, waiting while every queued answer waits for an opener's
        reply; None once every answer was handed out."""
        while True:
            answer = self.take()
            if answer is not None or not self._queued:
                return answer
            if self._changed is None:
                self._changed = asyncio.Event()
            self._changed.clear()
            await self._changed.wait()

    def finished(self, record: Record) -> None:
        """An answer handed out was graded as `record`: a fresh reply warms its question; its
        opener ending without one lets the question's next answer open it."""
        self._settled(record.system, record.question, fresh=replied_fresh(record))

    def _settled(self, system: str, question: str, *, fresh: bool) -> None:
        was = self._state.get(question)
        queued = len(self._queued.get(question, ()))
        if fresh:
            self._warm[question] = self._clock()
            self._openers.pop(question, None)
            if was in (COLD, OPENING):
                if queued:
                    self._state[question] = READY
                    self._ready.append(question)
                    if was == COLD:  # rare: a fresh reply for a question listed cold
                        self._promised += queued
                else:
                    del self._state[question]
        elif was == OPENING and self._openers.get(question) == (system, question):
            del self._openers[question]
            if queued:
                self._state[question] = COLD
                self._promised -= queued
                self._cold.appendleft(question)  # it was next in line: it opens next
            else:
                del self._state[question]
        if self._changed is not None:
            self._changed.set()

    def dropped(self, answer: Answer) -> None:
        """An answer handed out will never be graded in this run (its `--workers` process died):
        were it its question's opener, the question's next answer opens it, as after an opener
        without a fresh reply. Without this, the answers waiting for that reply would wait for
        ever."""
        self._settled(answer.system, answer.question, fresh=False)

    # -- the window ----------------------------------------------------------------------------

    def _fill(self) -> None:
        """Read answers into the window until it is full or the answers ran out."""
        source = self._source
        if source is None:
            return
        while self._count < self._window_answers and self._chars < self._window_chars:
            answer = next(source, None)
            if answer is None:
                self._source = None
                return
            question = answer.question
            queue = self._queued.get(question)
            if queue is None:
                queue = self._queued[question] = deque()
            state = self._state.get(question)
            if state is None:
                if self._is_warm(question):
                    state = self._state[question] = READY
                    self._ready.append(question)
                else:
                    state = self._state[question] = COLD
                    self._cold.append(question)
            if state != COLD:
                self._promised += 1
            queue.append(answer)
            self._count += 1
            self._chars += len(answer.answer)

    def _is_warm(self, question: str) -> bool:
        return self._clock() - self._warm.get(question, -WARM_SECONDS) < WARM_SECONDS

    def _pop(self, question: str) -> Answer:
        queue = self._queued[question]
        answer = queue.popleft()
        if not queue:
            del self._queued[question]
        self._count -= 1
        self._chars -= len(answer.answer)
        return answer

    def _open(self, question: str) -> Answer:
        """Hand out `question`'s next answer as its opener; the rest wait for its reply."""
        answer = self._pop(question)
        self._state[question] = OPENING
        self._openers[question] = (answer.system, question)
        return answer

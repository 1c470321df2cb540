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
- when no warm question has an answer waiting, the next cold question's opener goes, so other
  questions keep the concurrency full while openers are out;
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


class QuestionOrder:
    """Answers grouped by question, each question's first answer alone until its reply is back (the
    module docstring). Used by one event loop: `take`/`next` hand out answers, `finished` reports
    each graded one.

    `clock` gives seconds (monotonic), for the warm window; tests pass their own.
    """

    def __init__(
        self,
        answers: Iterable[Answer],
        *,
        window_answers: int = WINDOW_ANSWERS,
        window_chars: int = WINDOW_CHARS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source: Iterator[Answer] | None = iter(answers)
        self._window_answers = window_answers
        self._window_chars = window_chars
        self._clock = clock
        #: Answers read and not yet handed out, per question (a question with none has no entry).
        self._queued: dict[str, deque[Answer]] = {}
        self._count = 0
        self._chars = 0
        #: Questions with answers queued that may go now: warm ones (`_ready`), cold ones whose
        #: opener may go (`_cold`); a question whose opener is out is in neither.
        self._ready: deque[str] = deque()
        self._cold: deque[str] = deque()
        self._listed: set[str] = set()
        #: question -> when its last fresh reply came back.
        self._warm: dict[str, float] = {}
        #: question -> the (system, question) of its opener out at the judge.
        self._opening: dict[str, tuple[str, str]] = {}
        self._changed: asyncio.Event | None = None

    # -- handing out ---------------------------------------------------------------------------

    def take(self) -> Answer | None:
        """The next answer that may go now, or None: when `held` is true, answers wait for an
        opener's reply (ask again after `finished`); otherwise every answer was handed out."""
        self._fill()
        now = self._clock()
        while self._ready:
            question = self._ready[0]
            if now - self._warm.get(question, -WARM_SECONDS) < WARM_SECONDS:
                answer = self._pop(question)
                if question not in self._queued:
                    self._ready.popleft()
                    self._listed.discard(question)
                return answer
            # Cooled while its answers waited: the next one opens it again.
            self._ready.popleft()
            self._listed.discard(question)
            return self._open(question)
        if self._cold:
            question = self._cold.popleft()
            self._listed.discard(question)
            return self._open(question)
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
        question = record.question
        if replied_fresh(record):
            self._warm[question] = self._clock()
            self._opening.pop(question, None)
            if question in self._queued and question not in self._listed:
                self._ready.append(question)
                self._listed.add(question)
        elif self._opening.get(question) == (record.system, question):
            del self._opening[question]
            if question in self._queued and question not in self._listed:
                self._cold.appendleft(question)  # it was next in line: it opens next
                self._listed.add(question)
        if self._changed is not None:
            self._changed.set()

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
                if question not in self._opening:
                    warm = self._clock() - self._warm.get(question, -WARM_SECONDS) < WARM_SECONDS
                    (self._ready if warm else self._cold).append(question)
                    self._listed.add(question)
            queue.append(answer)
            self._count += 1
            self._chars += len(answer.answer)

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
        self._opening[question] = (answer.system, question)
        return answer

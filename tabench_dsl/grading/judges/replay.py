"""The `replay:RESULTS.jsonl` judge: the replies recorded in an earlier run, served again.

Every attempt of every record in the file is indexed by its `request_sha256` (the hash of the
request messages, `request_hash.request_sha256`), in file order. A request gets the next unused reply
recorded for the same messages (first in, first out per hash), so a first ask and its format re-ask,
which send the same messages, get the two replies recorded for them in that order (and so do a
cut-off reply and its re-ask with a larger budget: the reply's `stop` and `refusal` are served
with it). Attempts that
got no reply (transport failures) or carry no hash are skipped. A request with no reply left raises
a non-retryable `TransportError`: "no recorded reply for this prompt".

It registers the kind `replay:RESULTS.jsonl` (`registry`), which only `--judge` may name (a
manifest may not choose which file is read as results: `factory.manifest_backend_problem`).
"""

from __future__ import annotations

from collections import Counter, deque
from pathlib import Path

from ...core.errors import JudgeError, TransportError, UsageError
from ...core.records import Attempt, JudgeInfo
from ...store.results import iter_records
from .base import Completion, Judge, JudgeIdentity, JudgeParams, Message
from .registry import JudgeSetup, register_identity, register_judge
from .request_hash import request_sha256


class ReplayJudge(Judge):
    """Serves recorded replies from a results file; see the module docstring."""

    def __init__(self, path: str | Path, params: JudgeParams | None = None) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise JudgeError(f"replay: no results file at {self.path}")
        self._replies: dict[str, deque[Attempt]] = {}
        self.problems: list[str] = []
        models: Counter[str] = Counter()
        try:
            records = list(iter_records(self.path, on_problem=self.problems.append))
        except OSError as exc:
            raise JudgeError(f"replay: cannot read {self.path}: {exc.strerror}") from None
        for record in records:
            if record.tier == "t2":
                models[record.judge.model] += 1
            for attempt in record.attempts:
                if attempt.raw is None or attempt.request_sha256 is None:
                    continue
                queue = self._replies.setdefault(attempt.request_sha256, deque())
                queue.append(attempt)
        model = models.most_common(1)[0][0] if models else (params.model if params else "unknown")
        self.params = params or JudgeParams(model=model)
        self.info = JudgeInfo(backend="replay", model=model, label=str(self.path))

    def __repr__(self) -> str:
        return f"ReplayJudge(path={str(self.path)!r}, model={self.info.model!r})"

    @property
    def remaining(self) -> int:
        """Recorded replies not served yet."""
        return sum(len(queue) for queue in self._replies.values())

    async def complete(self, messages: list[Message]) -> Completion:
        """The next recorded reply for exactly these messages."""
        queue = self._replies.get(request_sha256(messages))
        if not queue:
            raise TransportError(f"replay: no recorded reply for this prompt in {self.path}", retryable=False)
        # A recorded cut-off or refused reply is served as one, so it is graded as it was.
        attempt = queue.popleft()
        return Completion(
            content=attempt.raw or "",
            tokens=attempt.tokens,
            latency_ms=0.0,
            stop=attempt.stop or "",
            refusal=attempt.refusal,
        )


@register_judge("replay")
def replay_judge(setup: JudgeSetup) -> ReplayJudge:
    """`replay:RESULTS.jsonl`: the replies recorded in that file (read whole at start)."""
    if not setup.argument:
        raise UsageError("--judge replay:FILE needs the results file to replay")
    return ReplayJudge(setup.argument)


@register_identity("replay", carries_request_shape=False)
def replay_identity(setup: JudgeSetup) -> JudgeIdentity:
    """A replay judge's identity, for the dry run: the file it replays, without reading it."""
    if not setup.argument:
        raise UsageError("--judge replay:FILE needs the results file to replay")
    info = JudgeInfo(backend="replay", model="recorded", label=setup.argument)
    return JudgeIdentity(info, JudgeParams(model="recorded"))

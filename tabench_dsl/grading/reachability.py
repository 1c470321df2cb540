"""Stop a grading whose judge cannot be used at all, instead of recording every answer as `error`.

A mistyped port or host name turns every T2 answer into `error`, and the score, which leaves
errors out, then rests on the T1 passes alone. So each judge of a run is watched
(`ReachabilityWatch`) until it first gives a reply: when its first `FIRST_CALLS` calls have all
failed for good (after their transport retries) without a connection (refused, or a host name that
does not resolve), the run stops with `JudgeUnusable`, naming the judge's URL and what failed. A
call that fails in any other way (a timeout, HTTP 500) reached the server, so from then on failures
are the transport's ordinary errors. HTTP 401, 403 and 404 stop the run at the first call
(`refused`): a refused key, an unknown model or a wrong base URL fails every answer alike.

The URL named is the judge's `endpoint` (`JudgeInfo`: no credentials, query or fragment), and the
failure is the transport's own message, which never carries a key or aiohttp's text.
"""

from __future__ import annotations

from ..core.errors import JudgeUnusable, TransportError
from ..core.records import JudgeInfo

#: How many calls of a judge that never replied must all fail to connect before the run stops.
FIRST_CALLS = 3
#: HTTP statuses that mean no answer can be graded with this configuration (a refused key, an
#: unknown model or a wrong base URL): the run stops instead of recording every answer as an error.
FATAL_STATUSES = frozenset({401, 403, 404})


def judge_where(info: JudgeInfo) -> str:
    """The judge as the stop message names it: its URL and its name, or its name alone when it has
    no URL."""
    return f"at {info.endpoint} ({info.describe()})" if info.endpoint else info.describe()


def refused(info: JudgeInfo, message: str) -> JudgeUnusable:
    """The error that stops the run on a 401, 403 or 404 (`message`: the transport's, scrubbed)."""
    return JudgeUnusable(
        f"the judge {judge_where(info)} refused the request: {message}; the run stopped, "
        "the records written are kept"
    )


class ReachabilityWatch:
    """Counts, per judge, the calls that failed to connect before that judge's first reply."""

    def __init__(self, first_calls: int = FIRST_CALLS) -> None:
        self.first_calls = first_calls
        #: Judges (by endpoint and name) known to be reachable: watched no more.
        self._reached: set[tuple[str, str]] = set()
        self._unreached: dict[tuple[str, str], int] = {}

    @staticmethod
    def _key(info: JudgeInfo) -> tuple[str, str]:
        return (info.endpoint, info.describe())

    def replied(self, info: JudgeInfo) -> None:
        """The judge gave a reply (of any content): it can be reached."""
        key = self._key(info)
        if key not in self._reached:
            self._reached.add(key)
            self._unreached.pop(key, None)

    def failed(self, info: JudgeInfo, exc: TransportError, message: str) -> None:
        """One call of the judge failed for good with `exc` (`message`: its scrubbed text). Raises
        `JudgeUnusable` for a fatal status, or when this is the `first_calls`-th failure to connect
        and the judge never replied."""
        if exc.status in FATAL_STATUSES:
            raise refused(info, message)
        key = self._key(info)
        if key in self._reached:
            return
        if not exc.unreachable:
            self.replied(info)  # the server was reached: its failures are the transport's to retry
            return
        failures = self._unreached.get(key, 0) + 1
        self._unreached[key] = failures
        if failures >= self.first_calls:
            raise JudgeUnusable(
                f"the judge {judge_where(info)} could not be reached: each of its first {failures} "
                f"calls failed ({message}); the run stopped, the records written are kept. "
                "Check the URL (--judge, OPENAI_BASE_URL) and that the server is up"
            )

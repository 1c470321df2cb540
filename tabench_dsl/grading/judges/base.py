"""What every judge backend is: the `Judge` base class, and the values it takes and gives.

A judge turns chat messages into one reply. It does not retry, decode or count: transport retries
live in `transport`, decoding in `verdict`, the retry/adjudicate logic in `runner`, totals in
`totals`. A failed exchange raises `TransportError` (see `errors`), never returns junk.

The seam, in full: a backend subclasses `Judge`, sets `info` and `params`, writes `complete`, and
overrides only what it has of the optional capabilities below; whoever holds a judge reads them as
plain attributes and methods (never probes with `getattr`):

    complete(messages)   one exchange (required)
    aclose()             release what the judge holds (default: nothing to release)
    exchange_timeout     seconds after which `complete` gives up by itself with a retryable
                         `TransportError`, or None when it has no limit of its own (default)
    shape_requests(s)    send the user's additions to every request (`request_shape`); by default
                         a judge that sends no requests ignores them
    request_shape        what those additions are, as the reply cache key names them ("": none)
    secrets              values never to appear in a message or a record (default: none)
    with_max_tokens(n)   the judge asking with another token budget (default: a shallow copy)
    batch_endpoint()     where its provider's batch service is (`BatchEndpoint`), or None: no
                         `--batch` (default)
    notice               where the judge says, once, what it changed in its requests during the
                         run (a refused parameter dropped); given when it is built
                         (`factory.make_judge`), never changed after (default: None)

It registers itself under a kind (`registry.register_judge`) so that `factory.make_judge` finds it
from a `--judge` name; the HTTP backends share their plumbing in `_http.HttpJudge`.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Callable

import msgspec

from ...core.ratelimit import RateReading
from ...core.records import JudgeInfo, Served, Tokens
from .request_shape import RequestShape


class Message(msgspec.Struct, frozen=True):
    """One chat message: role is "system" or "user"."""

    role: str
    content: str


#: The decoding parameters grading uses when neither the flags, the manifest nor the scorer name any.
DEFAULT_TEMPERATURE = 0.0
DEFAULT_MAX_TOKENS = 300
#: Seconds one judge exchange may take (`--timeout`'s default).
DEFAULT_TIMEOUT = 120.0


class JudgeParams(msgspec.Struct, frozen=True):
    """Decoding parameters sent with every call (and part of the cache key)."""

    model: str
    #: None: no temperature is sent (with a thinking budget: `decoding.decoding_params`); one the
    #: server refuses stops being sent but stays here (`HttpJudge.drop_refused_temperature`).
    temperature: float | None = DEFAULT_TEMPERATURE
    max_tokens: int = DEFAULT_MAX_TOKENS
    #: OpenAI's `reasoning_effort`, sent when set (`decoding.decoding_params`).
    reasoning_effort: str | None = None
    #: Anthropic's extended-thinking budget, sent as `thinking` when set.
    thinking_budget: int | None = None


class BatchEndpoint(msgspec.Struct, frozen=True):
    """Where a judge's provider takes batches (`Judge.batch_endpoint`): the service (`openai`,
    `anthropic`, `azure`: `batch.grader.BATCH_SERVICES`), its base URL and, for Azure, the
    api-version; `chat_completions` when its requests are Chat Completions bodies (what batch
    files hold)."""

    service: str
    base_url: str
    api_version: str | None = None
    chat_completions: bool = True


class JudgeIdentity(msgspec.Struct, frozen=True):
    """A judge as its records and cache entries name it, worked out without building it (the dry
    run): `info` (backend, model, endpoint), the decoding `params` its calls carry, and the digest
    of what the user adds to them (`Judge.request_shape`)."""

    info: JudgeInfo
    params: JudgeParams
    request_shape: str = ""


#: `Completion.stop` values: why a reply ended short of its own end.
STOP_LENGTH = "length"  # the token budget ran out (OpenAI `finish_reason: length`, Anthropic `max_tokens`)
STOP_REFUSAL = "refusal"  # the model refused (OpenAI's `refusal` field, Anthropic `stop_reason: refusal`)
STOP_TOOL_CALLS = "tool_calls"  # the model called a tool instead of answering
STOP_CONTENT_FILTER = "content_filter"  # the provider's filter stopped the reply


class Completion(msgspec.Struct, frozen=True):
    """A judge's reply: its text content (empty when it has none), the tokens the server reported,
    and what its rate-limit headers said (`rate`, None when it sent none), for the pacer.

    `stop` is why the reply ended when not at its own end (the `STOP_*` values; "" for a reply
    that ended by itself), `refusal` a refusal's text, `served` who answered (model, reply id,
    fingerprint) as the reply says. A reply without text is still a reply: its tokens were billed,
    and the grading loop decides what it means (`reply_endings`)."""

    content: str
    tokens: Tokens = Tokens()
    latency_ms: float = 0.0
    rate: RateReading | None = None
    stop: str = ""
    refusal: str | None = None
    served: Served | None = None


class Judge(abc.ABC):
    """A judge backend. `info` labels it in every record; `complete` makes one exchange.

    The optional capabilities are declared here with their defaults (see the module docstring): a
    backend overrides the ones it has, and nothing else needs to know which backend it holds."""

    info: JudgeInfo
    params: JudgeParams
    #: Seconds after which one `complete` gives up by itself with a retryable `TransportError`
    #: ("no reply within ..."), or None: then `transport.call_with_retries` times each call.
    exchange_timeout: float | None = None
    #: The digest of what the user adds to every request (`request_shape.shape_digest`), part of
    #: the reply cache key; "" when nothing is added.
    request_shape: str = ""

    @property
    def secrets(self) -> tuple[str, ...]:
        """Values this judge holds that must never reach a message or a record; by default none."""
        return ()

    def shape_requests(self, shape: RequestShape) -> None:  # noqa: B027 - a default: most judges send nothing
        """Send `shape`'s additions with every request; a judge that makes no request ignores them."""

    #: Told, once, what the judge changed in its requests during the run (a refused temperature
    #: dropped), for the caller to show; None: nobody listens. Set as the judge is built.
    notice: Callable[[str], None] | None = None

    @abc.abstractmethod
    async def complete(self, messages: list[Message]) -> Completion:
        """One exchange. Raises `TransportError` for anything that is not a usable reply."""

    def batch_endpoint(self) -> BatchEndpoint | None:
        """Where this judge's provider takes batches; None (the default): it has no batch service."""
        return None

    def reply_tokens(self) -> int:
        """The most reply tokens one request of this judge can be billed for (what `--max-cost`
        reserves): its `max_tokens`, unless the user's body fields ask for more (`RequestShape`)."""
        return self.params.max_tokens

    def with_max_tokens(self, max_tokens: int) -> Judge:
        """This judge asking with a budget of `max_tokens` (the re-ask of a cut-off reply): a shallow
        copy, sharing its session, key and headers, whose `params` (and so whose reply cache key)
        name the new budget."""
        twin = copy.copy(self)
        twin.params = msgspec.structs.replace(self.params, max_tokens=max_tokens)
        return twin

    async def aclose(self) -> None:  # noqa: B027 - a default, not abstract: most judges hold nothing
        """Release the HTTP session or files the judge holds; by default it holds none."""

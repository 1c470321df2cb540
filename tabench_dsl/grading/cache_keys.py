"""The reply cache's keys: `cache_key`, the sha256 of the canonical JSON of (backend, endpoint,
model, parameters, messages, attempt), and what the user adds to every request when they add
anything (`shape`: the structured schema, `--judge-param` fields, `--judge-header` hashes;
`request_shape.shape_digest`).

`endpoint` is the judge's base URL without credentials or query (`JudgeInfo.endpoint`), so one model
served by two servers (a local vLLM, then OpenAI) has two sets of entries and switching
OPENAI_BASE_URL never replays the other server's replies. `attempt` is the kind of judge attempt
(`first`, `format`, `stern`), so the format re-ask after a malformed reply, sent with the very same
messages, has an entry of its own and a rerun replays the same sequence of replies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import msgspec

from .judges.base import Judge, JudgeIdentity, JudgeParams, Message
from .repeats import repeat_kind

_key_encoder = msgspec.json.Encoder(order="sorted")


def reply_key(
    judge: Judge | JudgeIdentity, messages: Sequence[Message], kind: str, repetition: int = 0
) -> str:
    """The cache key of ask number `repetition` (0-based, `--repeat`) of `judge` with `messages` as
    attempt `kind` (`first`, `format`, `stern`): the module docstring's one rule."""
    info = judge.info
    return cache_key(
        info.backend,
        judge.params,
        messages,
        repeat_kind(kind, repetition),
        endpoint=info.endpoint,
        shape=judge.request_shape,
    )


def cache_key(
    backend: str,
    params: JudgeParams,
    messages: Sequence[Message],
    attempt: str,
    *,
    endpoint: str = "",
    shape: str = "",
) -> str:
    """sha256 (hex) of the canonical JSON of everything that decides a judge's reply: `endpoint` is
    the server asked (`JudgeInfo.endpoint`), `shape` the digest of the user's additions. The reasoning
    controls and the shape are named only when set, so the keys of calls without them are what they
    always were.

    The JSON has sorted keys and no spaces: `{"attempt", "backend", "endpoint", "messages",
    "model", "params"[, "shape"]}`. It is hashed in parts: the part up to the first message (a
    question's SYSTEM prompt, the same for each of its answers) is hashed once and its sha256 state
    copied for each call, so its few kilobytes are not encoded and hashed again for every answer."""
    decoding: dict[str, object] = {"temperature": params.temperature, "max_tokens": params.max_tokens}
    if params.reasoning_effort is not None:
        decoding["reasoning_effort"] = params.reasoning_effort
    if params.thinking_budget is not None:
        decoding["thinking_budget"] = params.thinking_budget
    if not messages:
        return _whole_key(backend, endpoint, params.model, decoding, messages, attempt, shape)
    digest = _key_head(attempt, backend, endpoint, messages[0]).copy()
    encode = _key_encoder.encode
    for message in messages[1:]:
        digest.update(b",")
        digest.update(encode((message.role, message.content)))
    digest.update(b'],"model":')
    digest.update(encode(params.model))
    digest.update(b',"params":')
    digest.update(encode(decoding))
    if shape:
        digest.update(b',"shape":')
        digest.update(encode(shape))
    digest.update(b"}")
    return digest.hexdigest()


#: sha256 states of a key's JSON up to and with its first message, by (attempt, backend, endpoint,
#: message); bounded, as `request_hash` bounds its own.
_heads: dict[tuple[str, str, str, Message], hashlib._Hash] = {}
_HEADS_MAX = 4096


def _key_head(attempt: str, backend: str, endpoint: str, first: Message) -> hashlib._Hash:
    """The sha256 state after `{"attempt":...,"backend":...,"endpoint":...,"messages":[FIRST`."""
    found = (attempt, backend, endpoint, first)
    head = _heads.get(found)
    if head is None:
        encode = _key_encoder.encode
        head = hashlib.sha256(
            b'{"attempt":'
            + encode(attempt)
            + b',"backend":'
            + encode(backend)
            + b',"endpoint":'
            + encode(endpoint)
            + b',"messages":['
            + encode((first.role, first.content))
        )
        if len(_heads) >= _HEADS_MAX:
            _heads.clear()
        _heads[found] = head
    return head


def _whole_key(
    backend: str,
    endpoint: str,
    model: str,
    decoding: dict[str, object],
    messages: Sequence[Message],
    attempt: str,
    shape: str,
) -> str:
    """The key's JSON built whole and hashed (a request without messages)."""
    key: dict[str, object] = {
        "backend": backend,
        "endpoint": endpoint,
        "model": model,
        "params": decoding,
        "messages": [[m.role, m.content] for m in messages],
        "attempt": attempt,
    }
    if shape:
        key["shape"] = shape
    return hashlib.sha256(_key_encoder.encode(key)).hexdigest()

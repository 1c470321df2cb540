"""The sha256 of a request's messages: the key `replay:` finds recorded replies by, and each
attempt's `request_sha256`."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import msgspec

from .base import Message

#: Sorted keys, no spaces, non-ASCII as UTF-8, `"`, `\\` and control characters escaped: byte for
#: byte what `json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))`
#: gives (checked over every code point), at a fraction of its cost.
_canonical = msgspec.json.Encoder(order="sorted")


#: sha256 states after `[` + the first message, by that message: a battery's system message is the
#: same for every answer of a question, so its few kilobytes are hashed once, not once per call.
_prefixes: dict[Message, hashlib._Hash] = {}
_PREFIXES_MAX = 4096


def request_sha256(messages: Sequence[Message]) -> str:
    """sha256 (hex) of the canonical JSON of the messages' `[{"content", "role"}, ...]` list:
    sorted keys, no spaces, UTF-8. The key `replay:` finds recorded replies by."""
    if len(messages) > 1 and all(type(m) is Message for m in messages):
        # A Message encodes as {"content", "role"} under sorted order: no dicts to build. The
        # list's encoding is `[` + its items joined by `,` + `]`, so it is hashed in those parts.
        first = messages[0]
        prefix = _prefixes.get(first)
        if prefix is None:
            prefix = hashlib.sha256(b"[" + _canonical.encode(first))
            if len(_prefixes) >= _PREFIXES_MAX:
                _prefixes.clear()
            _prefixes[first] = prefix
        digest = prefix.copy()
        for message in messages[1:]:
            digest.update(b",")
            digest.update(_canonical.encode(message))
        digest.update(b"]")
        return digest.hexdigest()
    payload = [{"content": m.content, "role": m.role} for m in messages]
    return hashlib.sha256(_canonical.encode(payload)).hexdigest()

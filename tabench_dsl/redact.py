"""Keeping keys out of every message tabench records or prints: one scrubber for the judges' HTTP
errors and the grading loop's records.

`scrub` replaces the given secret values (the keys in use, the values of `SECRET_VARIABLES`) and
anything key-shaped (servers echo masked keys back, `sk-...****abcd`) with `REDACTED`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: Environment variables whose values must never appear in a record or a message.
SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
#: Anything that looks like an API key in a server's message (they echo masked keys back).
KEY_SHAPED = re.compile(r"\b(?:sk|sk-ant|key|api)[-_][A-Za-z0-9_*.\-]{6,}")
#: What a secret or a key-shaped word is replaced by.
REDACTED = "[redacted]"


def secrets_in(env: Mapping[str, str]) -> list[str]:
    """The non-empty values of `SECRET_VARIABLES` in `env`."""
    return [value for value in (env.get(name) for name in SECRET_VARIABLES) if value]


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every one of `secrets` and every key-shaped word replaced by `REDACTED`."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return KEY_SHAPED.sub(REDACTED, text)

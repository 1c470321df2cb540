"""Keeping keys out of everything tabench records or prints: one scrubber for the judges' HTTP
errors, the grading loop's recorded errors and every judge reply as it enters tabench
(`runner.Grader`), before it is decoded, cached or written.

`scrub` replaces the given secret values (the keys in use, the values of `SECRET_VARIABLES`, the
`--judge-header` values) and anything key-shaped (servers echo masked keys back, `sk-...****abcd`)
with `REDACTED`.

A secret value is cut only when it is `MIN_SECRET_LENGTH` characters or longer. A shorter one can be
ordinary text (`--judge-header Helicone-Cache-Enabled=true`, `OPENAI_API_KEY=x`): cutting it would
cut words out of every reply before it is decoded (`e[redacted]tra_correct_info`), and a value that
short is no secret anyway (it can be guessed). Such values are still sent; the command line warns
that they are not kept secret (`too_short`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: Environment variables whose values must never appear in a record or a message.
SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY")
#: Anything that looks like an API key in a server's message or a judge's reply (servers echo masked
#: keys back): `sk-` or `sk_` and six or more key characters (OpenAI's and Anthropic's keys, whole or
#: masked), or `key-`/`api-` (or `_`) and six or more with a digit or `*` among them. Whole replies
#: are scrubbed, so that second form spares words a verdict's reason uses: `key_points`,
#: `api-compatible`.
KEY_SHAPED = re.compile(r"\b(?:sk[-_]|(?:key|api)[-_](?=[A-Za-z0-9_*.\-]*[0-9*]))[A-Za-z0-9_*.\-]{6,}")
#: The literal text every key-shaped word holds: a text holding none of them has none (a reply is
#: looked over for these first, which costs far less than the search).
_KEY_MARKS = ("sk-", "sk_", "key-", "key_", "api-", "api_")
#: The shortest secret value cut from text: 20 characters. Every provider key is longer (OpenAI's
#: `sk-...` and Anthropic's `sk-ant-...` are 40 to 160, Azure's 32), a random value of 20 key
#: characters holds about 119 bits, and ordinary words and the identifiers a reply holds are
#: shorter (a verdict's facet names, `extra_correct_info`, are under 20).
MIN_SECRET_LENGTH = 20
#: What a secret or a key-shaped word is replaced by.
REDACTED = "[redacted]"


def secrets_in(env: Mapping[str, str]) -> list[str]:
    """The non-empty values of `SECRET_VARIABLES` in `env`."""
    return [value for value in (env.get(name) for name in SECRET_VARIABLES) if value]


def too_short(named: Iterable[tuple[str, str]]) -> list[str]:
    """The names of the (name, value) pairs whose value is set but too short to be kept secret
    (under `MIN_SECRET_LENGTH`): `scrub` leaves such a value in the text."""
    return [name for name, value in named if value and len(value) < MIN_SECRET_LENGTH]


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every one of `secrets` (those of `MIN_SECRET_LENGTH` characters or more) and every
    key-shaped word replaced by `REDACTED`."""
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    if not any(mark in text for mark in _KEY_MARKS):
        return text
    return KEY_SHAPED.sub(REDACTED, text)

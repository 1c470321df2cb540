"""What a judge server said about its rate limit, in one shape whatever the provider.

Providers report their limits in reply headers under their own names and formats (OpenAI:
`x-ratelimit-remaining-requests: 59`, `x-ratelimit-reset-requests: 1s`; Anthropic:
`anthropic-ratelimit-requests-remaining: 59`, `anthropic-ratelimit-requests-reset:
2026-01-01T00:00:01Z`). Each HTTP judge reads its own (`grading.pacing` has the parsers) into a
`RateReading`, attached to the reply (`Completion.rate`) or to the error (`TransportError.rate`),
and the pacer (`grading.pacing.Pacer`) slows the senders down before the server has to say no.

Resets are kept as seconds from the moment the reply was read, so the reading does not depend on
the server's clock agreeing with ours beyond that one subtraction.
"""

from __future__ import annotations

import msgspec


class RateReading(msgspec.Struct, frozen=True):
    """A server's rate-limit state after one reply; None where it did not say.

    `*_limit` is the most the window or bucket holds, `*_remaining` what is left of it, `*_reset`
    the seconds until it is whole again."""

    requests_limit: int | None = None
    requests_remaining: int | None = None
    requests_reset: float | None = None
    tokens_limit: int | None = None
    tokens_remaining: int | None = None
    tokens_reset: float | None = None

"""The injection flag: does an answer try to forge the prompt or steer the judge?

The patterns live in the scorer's settings (`injection:`, a list of regular expressions searched
case-insensitively, `^`/`$` at line boundaries; checked where the scorer is loaded), run on RE2
(`core.linear_regex`), so a battery's pattern cannot take time that grows faster than the answer
it is searched in. A flagged
answer is graded like any other: the flag is recorded on the record (`injection_suspect`) and
never changes a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..core.linear_regex import compile_linear


def compile_injection(patterns: Sequence[str]) -> Any | None:
    """The scorer's injection patterns as one compiled regex (None when there are none)."""
    return _compiled(tuple(patterns))


def injection_suspect(answer: str, patterns: Sequence[str]) -> bool:
    """True when some injection pattern matches somewhere in `answer` (the patterns are compiled
    once per distinct list, so calling this per answer is cheap)."""
    pattern = compile_injection(patterns)
    return bool(pattern and pattern.search(answer))


@lru_cache(maxsize=32)
def _compiled(patterns: tuple[str, ...]) -> Any | None:
    if not patterns:
        return None
    return compile_linear("|".join(f"(?:{p})" for p in patterns))

"""The injection flag: does an answer try to forge the prompt or steer the judge?

The patterns live in the scorer's settings (`injection:`, a list of regular expressions searched
case-insensitively, `^`/`$` at line boundaries; checked where the scorer is loaded). A flagged
answer is graded like any other: the flag is recorded on the record (`injection_suspect`) and
never changes a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from ..core.scorer import INJECTION_FLAGS


def compile_injection(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """The scorer's injection patterns as one compiled regex (None when there are none)."""
    return _compiled(tuple(patterns))


def injection_suspect(answer: str, patterns: Sequence[str]) -> bool:
    """True when some injection pattern matches somewhere in `answer` (the patterns are compiled
    once per distinct list, so calling this per answer is cheap)."""
    pattern = compile_injection(patterns)
    return bool(pattern and pattern.search(answer))


@lru_cache(maxsize=32)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), INJECTION_FLAGS)

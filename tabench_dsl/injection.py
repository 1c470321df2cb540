"""The injection flag (spec section 6): does an answer try to forge the prompt or steer the judge?

The patterns live in the scorer's YAML (`injection:`, a list of regular expressions searched
case-insensitively, `^`/`$` at line boundaries). A flagged answer is graded like any other: the flag
is recorded on the record (`injection_suspect`) and never changes a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

_FLAGS = re.IGNORECASE | re.MULTILINE


@lru_cache(maxsize=32)
def compile_patterns(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """The scorer's injection patterns as one compiled alternation (None when there are none).

    Cached on the pattern tuple, so calling `injection_suspect` per answer compiles once.
    Raises `re.error` naming the bad pattern.
    """
    for pattern in patterns:
        try:
            re.compile(pattern, _FLAGS)
        except re.error as exc:
            raise re.error(f"injection pattern {pattern!r}: {exc.msg}") from None
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), _FLAGS)


def injection_suspect(answer: str, settings: Mapping[str, Any] | Sequence[str] | None) -> bool:
    """True when some injection pattern of the scorer matches somewhere in `answer`.

    `settings` is the scorer's whole settings mapping (its `injection:` list is used) or that list.
    """
    pattern = compile_patterns(_patterns(settings))
    return bool(pattern and pattern.search(answer))


def _patterns(settings: Mapping[str, Any] | Sequence[str] | None) -> tuple[str, ...]:
    if settings is None:
        return ()
    if isinstance(settings, str):
        return (settings,)
    if isinstance(settings, Mapping):
        settings = settings.get("injection") or ()
    items: Iterable[Any] = settings
    return tuple(str(p) for p in items)

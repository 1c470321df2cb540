"""The injection flag: does an answer try to forge the prompt or steer the judge?

The patterns live in the scorer's YAML (`injection:`, a list of regular expressions searched
case-insensitively, `^`/`$` at line boundaries). A flagged answer is graded like any other: the flag
is recorded on the record (`injection_suspect`) and never changes a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from .contradiction import check_patterns

_FLAGS = re.IGNORECASE | re.MULTILINE

Settings = Mapping[str, Any] | Sequence[str] | None


def compile_injection(settings: Settings, *, source: str | Path | None = None) -> re.Pattern[str] | None:
    """The scorer's injection patterns as one compiled regex (None when there are none).

    `settings` is the scorer's whole settings mapping (its `injection:` list is used) or that list.
    A bad list raises `SpecError`, at the entry's line and column when `source` (the scorer.yaml)
    is given; lint can call this to report a bad scorer before grading starts.
    """
    value: Any
    if isinstance(settings, Mapping):
        value = settings.get("injection")
    elif isinstance(settings, str):
        value = [settings]
    else:
        value = None if settings is None else list(settings)
    return _compiled(tuple(check_patterns(value, source, "injection")))


def injection_suspect(answer: str, settings: Settings) -> bool:
    """True when some injection pattern of the scorer matches somewhere in `answer`.

    The patterns are compiled once per distinct list (cached), so calling this per answer is cheap.
    """
    pattern = compile_injection(settings)
    return bool(pattern and pattern.search(answer))


@lru_cache(maxsize=32)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), _FLAGS)

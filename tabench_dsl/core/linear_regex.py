"""Regular expressions a battery's scorer supplies, run on an engine with linear time (RE2).

A scorer inside a battery folder is data someone else wrote, and a regular expression is a small
program: on Python's backtracking engine, `(a+)+$` takes seconds on a few dozen characters of an
answer, and the same answer is searched once per record. The `injection:` patterns are compiled
with google-re2 instead, whose matching time grows with the text, never exponentially. RE2 has no
backreferences and no lookaround; a pattern that uses them (or that RE2 cannot compile within its
memory budget) is a `PatternError`, which the scorer loader reports at the pattern's line.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import re2

#: The memory RE2 may give one compiled pattern (bytes); a bigger pattern is refused.
MAX_PATTERN_MEMORY = 8 << 20


class PatternError(ValueError):
    """A pattern RE2 cannot run; the message says why."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the reason is raised to the caller, not printed by RE2
    options.max_mem = MAX_PATTERN_MEMORY
    return options


@lru_cache(maxsize=64)
def compile_linear(pattern: str, *, ignore_case: bool = True, multiline: bool = True) -> Any:
    """`pattern` compiled by RE2 (case-insensitive, `^`/`$` at line boundaries by default); its
    `search(text)` returns a match or None, as Python's does. `PatternError` when RE2 refuses it."""
    flags = ("i" if ignore_case else "") + ("m" if multiline else "")
    try:
        return re2.compile(f"(?{flags}){pattern}" if flags else pattern, _options())
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise PatternError(
            f"{detail} (scorer patterns run on RE2, in linear time: no backreferences, no lookaround)"
        ) from None

"""The graded pairs whose question's prompt changed since: `grade --resume --regrade-changed`.

A record keeps the sha256 of the SYSTEM prompt it was graded under (`prompt_sha256`); when the
battery's prompt for that question is no longer the same, the verdict was given to another prompt
and the answer is graded again (the new record, appended, is the pair's last and stands).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .light_records import iter_light_records


def changed_pairs(path: str | Path, prompt_sha256: Mapping[str, str]) -> set[tuple[str, str]]:
    """The (system, question) pairs of the results file `path` whose last record is final and was
    graded under a SYSTEM prompt other than `prompt_sha256[question]` (questions not in the mapping
    are left out: they are not in the battery)."""
    if not Path(path).exists():
        return set()
    last: dict[tuple[str, str], tuple[str, str]] = {}
    for record in iter_light_records(path):
        last[(record.system, record.question)] = (record.verdict, record.prompt_sha256)
    return {
        pair
        for pair, (verdict, sha) in last.items()
        if verdict != "error" and pair[1] in prompt_sha256 and sha != prompt_sha256[pair[1]]
    }

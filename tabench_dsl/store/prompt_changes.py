"""The graded pairs whose question's prompt changed since: `grade --resume --regrade-changed`.

A record keeps the sha256 of the SYSTEM prompt it was graded under (`prompt_sha256`); when the
battery's prompt for that question is no longer the same, the verdict was given to another prompt
and the answer is graded again (the new record, appended, is the pair's last and stands).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from .light_records import iter_light_records
from .pair_table import PairTable


def changed_pairs(path: str | Path, prompt_sha256: Mapping[str, str]) -> set[tuple[str, str]]:
    """The (system, question) pairs of the results file `path` whose last record is final and was
    graded under a SYSTEM prompt other than `prompt_sha256[question]` (questions not in the mapping
    are left out: they are not in the battery). Each pair's last word is kept as one cell of a
    `PairTable` (its names numbered), not as a dict of every pair of the file."""
    if not Path(path).exists():
        return set()
    systems: dict[str, int] = {}
    questions: dict[str, int] = {}
    changed = PairTable()  # 1: the pair's last record is final and graded under another prompt
    for record in iter_light_records(path):
        now = prompt_sha256.get(record.question)
        stale = record.verdict != "error" and now is not None and record.prompt_sha256 != now
        s = systems.setdefault(record.system, len(systems))
        q = questions.setdefault(record.question, len(questions))
        changed.put(s, q, int(stale))
    system_names, question_names = list(systems), list(questions)
    return {
        (system_names[s], question_names[q])
        for s in changed.systems()
        for q in changed.questions_of(s)
        if changed.get(s, q) == 1
    }

"""`grade --resume --regrade-changed`: the pairs already done whose question's prompt changed are
graded again; the command says how many."""

from __future__ import annotations

import sys
from collections.abc import Set
from pathlib import Path

from ..core.compiled import CompiledBattery
from ..core.prompt_changes import changed_pairs


def without_changed(out: Path, compiled: CompiledBattery, skip: Set[tuple[str, str]]) -> Set[tuple[str, str]]:
    """`skip` (the pairs --resume skips) without those graded under another SYSTEM prompt than the
    battery's now; says on stderr how many will be graded again."""
    changed = changed_pairs(out, {qid: q.sha256 for qid, q in compiled.questions.items()})
    questions = len({question for _, question in changed})
    print(
        f"--regrade-changed: {len(changed)} answer(s) of {questions} question(s) graded again: "
        "their prompt changed since they were graded",
        file=sys.stderr,
    )
    return skip - changed

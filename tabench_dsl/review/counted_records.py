"""The records `totals` reads, with the decisions beside them applied.

Counting never looks at an answer, a reason or a reply text, so the records are read without them
(`light_records.iter_light_records`): a million records fit in a fraction of the memory, and the decoder
skips those texts instead of building them. One thing needs an answer: a blind audit is dropped as
stale when the answer it was made on changed (`audit.stale_audit_reason` compares the answer's
sha256). When the decisions file holds such an audit, the records are read whole, so no figure can
differ from what a whole read gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from ..core.records import Decision, Record
from ..store.decisions import load_decisions
from ..store.light_records import iter_light_records
from ..store.results import iter_records
from .decisions import apply_decisions


def counted_records(
    results: Path, decisions_file: Path | None, *, on_problem: Callable[[str], None]
) -> list[Record]:
    """The records of `results` as counting reads them, in file order, the decisions of
    `decisions_file` (when it exists) applied; bad lines go to `on_problem`."""
    decisions = decisions_beside(decisions_file)
    read = iter_records if reads_whole(decisions) else iter_light_records
    records = list(read(results, on_problem=on_problem))
    return apply_decisions(records, decisions) if decisions else records


def decisions_beside(decisions_file: Path | None) -> list[Decision]:
    """The decisions of `decisions_file`, none when there is no such file."""
    return load_decisions(decisions_file) if decisions_file is not None and decisions_file.is_file() else []


def reads_whole(decisions: Iterable[Decision]) -> bool:
    """True when the records must be read whole to count them with `decisions`: one of them is an
    audit that names the answer it was made on (it is stale if that changed)."""
    return any(decision.is_audit and isinstance(decision.answer_sha256, str) for decision in decisions)

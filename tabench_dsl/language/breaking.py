"""`tabench breaking OLD NEW`: what an edit of a battery does to the results graded under it.

Both batteries are loaded and compiled; each question is classified by what grading would see:

    removed   in OLD only, and no question of NEW has its SYSTEM prompt
    added     in NEW only, and no question of OLD had its SYSTEM prompt
    renamed   in OLD only, and a question in NEW only has the same SYSTEM prompt (a new id)
    key       gold, accepted variants, trap, T1 switch or T1 rule changed (what T1 decides on
              and how, and what the judge is told is right): a new `t1: {rule: ...}` changes the
              verdicts of every question T1 may pass
    prompt    the SYSTEM prompt's bytes differ, or the USER or STERN frame does (a new scorer)
    cosmetic  the question's source text differs, its prompt and keys do not

A question in neither list is unchanged. Results graded before a `removed`, `key` or `prompt`
change are no longer comparable with results graded after it: `breaks` says whether any is.
Results of a `renamed` question keep their meaning, under their old id.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.compiled import CompiledBattery, CompiledQuestion
from ..core.nodes import Battery, Question

#: The kinds of change, in the order reports list them.
KINDS: tuple[str, ...] = ("removed", "renamed", "key", "prompt", "added", "cosmetic")

#: The kinds after which old results are no longer comparable.
BREAKING_KINDS: frozenset[str] = frozenset({"removed", "key", "prompt"})


@dataclass(frozen=True)
class Change:
    """One question's change: its id in OLD (None when added), in NEW (None when removed), the kind,
    and its SYSTEM prompt's sha256 on each side (None where it is absent)."""

    kind: str
    old_id: str | None
    new_id: str | None
    old_sha256: str | None
    new_sha256: str | None

    def as_json(self) -> dict[str, object]:
        """The change as `breaking --json` writes it."""
        return {
            "change": self.kind,
            "old_id": self.old_id,
            "new_id": self.new_id,
            "old_sha256": self.old_sha256,
            "new_sha256": self.new_sha256,
            "breaking": self.kind in BREAKING_KINDS,
        }


@dataclass(frozen=True)
class Side:
    """One battery as compared: loaded, compiled, and each question's source text."""

    battery: Battery
    compiled: CompiledBattery
    sources: dict[str, str]


def side_of(battery: Battery, compiled: CompiledBattery) -> Side:
    """`battery` with its compiled prompts and the source text of each question's block."""
    return Side(battery, compiled, question_sources(battery.questions))


def question_sources(questions: tuple[Question, ...]) -> dict[str, str]:
    """Each question's block as written: the lines from its `question` keyword to the line before
    the next question of its file (or the end of the file)."""
    by_file: dict[str, list[Question]] = defaultdict(list)
    for question in questions:
        by_file[question.pos.path].append(question)
    sources: dict[str, str] = {}
    for path, found in by_file.items():
        try:
            lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
        except (OSError, UnicodeDecodeError):
            lines = []
        found.sort(key=lambda q: q.pos.line)
        for question, after in zip(found, [*found[1:], None], strict=True):
            end = after.pos.line - 1 if after is not None else len(lines)
            sources[question.id] = "\n".join(lines[question.pos.line - 1 : end]).rstrip()
    return sources


def compare(old: Side, new: Side) -> list[Change]:
    """Every question's change from `old` to `new` (unchanged ones left out), in `KINDS` order,
    then in OLD's question order (NEW's for additions)."""
    old_q, new_q = old.compiled.questions, new.compiled.questions
    frames_differ = (old.compiled.user, old.compiled.stern) != (new.compiled.user, new.compiled.stern)
    old_keys = {q.id: _keys(q, old.battery) for q in old.battery.questions}
    new_keys = {q.id: _keys(q, new.battery) for q in new.battery.questions}
    changes: list[Change] = []
    for qid, before in old_q.items():
        after = new_q.get(qid)
        if after is None:
            continue
        kind = None
        if old_keys.get(qid) != new_keys.get(qid):
            kind = "key"
        elif before.system != after.system or frames_differ:
            kind = "prompt"
        elif old.sources.get(qid) != new.sources.get(qid):
            kind = "cosmetic"
        if kind is not None:
            changes.append(Change(kind, qid, qid, before.sha256, after.sha256))
    changes.extend(_gone_and_new(old_q, new_q))
    order = {kind: i for i, kind in enumerate(KINDS)}
    return sorted(changes, key=lambda c: order[c.kind])  # stable: file order within a kind


def _gone_and_new(
    old_q: Mapping[str, CompiledQuestion], new_q: Mapping[str, CompiledQuestion]
) -> list[Change]:
    """Removed, renamed and added questions: an id on one side only, paired by SYSTEM prompt."""
    added = {qid: q for qid, q in new_q.items() if qid not in old_q}
    by_prompt: dict[str, list[str]] = defaultdict(list)
    for qid, q in added.items():
        by_prompt[q.sha256].append(qid)
    changes = []
    for qid, before in old_q.items():
        if qid in new_q:
            continue
        twins = by_prompt.get(before.sha256)
        if twins:
            new_id = twins.pop(0)
            del added[new_id]
            changes.append(Change("renamed", qid, new_id, before.sha256, before.sha256))
        else:
            changes.append(Change("removed", qid, None, before.sha256, None))
    changes.extend(Change("added", None, qid, None, q.sha256) for qid, q in added.items())
    return changes


def _keys(question: Question, battery: Battery) -> tuple[object, ...]:
    """What T1 and the judge decide `question` on: its keys, its trap, and T1's switch and rule."""
    t1 = battery.t1 and question.t1
    return (question.gold, question.accept, question.trap, t1, battery.t1_rule if t1 else None)


def breaks(changes: list[Change]) -> bool:
    """Whether any change leaves old results no longer comparable."""
    return any(c.kind in BREAKING_KINDS for c in changes)

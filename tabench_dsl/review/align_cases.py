"""What `tabench align` learns from: the answers people decided, split into a training share and a
held-out share, and the exemplars the training disagreements propose.

A decided answer is a standing record a person judged: an `adjudicate` they settled, or a blind
audit of a judge's (or T1's) verdict, with several reviewers their consensus (`audit.attach_audits`;
an answer the reviewers disagree on is no one's verdict and is left out). It is a disagreement when
the person's verdict is not the tool's: every settled `adjudicate` is one (the tool gave no verdict),
an audit is one when the person overturned the verdict.

The split hashes the seed with (system, question): an answer is held out when the sha256 of
`seed, "holdout", system, question`, read as a fraction of 2**256, is below the held-out share. The
same seed and share give the same split whatever the file's order, and a larger share only moves
answers from training to held-out (the fraction of each answer is fixed by the seed).

Each training disagreement proposes an exemplar on its question: `correct` when the person passed
the answer, `incorrect` when they failed it, `partial` when their note says the answer is partial;
the answer as graded (the text the judge read), `why` the person's note on one line (a neutral text
naming the verdict when there is none).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence

import msgspec

from ..core.records import Decision, Record
from ..core.redact import scrub, secrets_in
from ..language.align import NewExemplar

#: A note that says the answer is partial: the exemplar is then `partial`, whatever the verdict.
PARTIAL_NOTE = re.compile(r"\bpartial(ly)?\b", re.IGNORECASE)

#: The longest `why` an exemplar takes from a note (a longer note is cut at a word).
MAX_WHY = 200

#: The `why` of an exemplar whose person wrote no note.
NEUTRAL_WHY = {"pass": "a reviewer passed this answer", "fail": "a reviewer failed this answer"}


class DecidedAnswer(msgspec.Struct, frozen=True):
    """One answer a person judged: what the tool said (`tool_verdict`: pass, fail or adjudicate),
    what the person said, who, their note, and whether it was a blind audit."""

    system: str
    question: str
    answer: str
    tool_verdict: str
    person_verdict: str
    reviewer: str
    note: str
    audit: bool

    @property
    def disagrees(self) -> bool:
        return self.tool_verdict != self.person_verdict


def decided_answers(standing: Iterable[Record]) -> list[DecidedAnswer]:
    """Every standing record a person judged (a settled adjudicate, or an audit's consensus), in order."""
    found = []
    for record in standing:
        human: Decision | None = record.decision or record.audited_by_human
        if human is None:
            continue
        found.append(
            DecidedAnswer(
                record.system,
                record.question,
                record.graded_answer,
                record.verdict,
                human.verdict,
                human.reviewer,
                human.note,
                human.is_audit,
            )
        )
    return found


def holdout_fraction(seed: int, system: str, question: str) -> float:
    """Where (system, question) falls in [0, 1) for the seed's split (module docstring)."""
    digest = hashlib.sha256(f"{seed}\0holdout\0{system}\0{question}".encode()).digest()
    return int.from_bytes(digest, "big") / 2**256


def split_decided(
    decided: Sequence[DecidedAnswer], *, holdout: float, seed: int
) -> tuple[list[DecidedAnswer], list[DecidedAnswer]]:
    """(training, held-out): each answer held out when its fraction is below `holdout`."""
    training: list[DecidedAnswer] = []
    held_out: list[DecidedAnswer] = []
    for answer in decided:
        side = held_out if holdout_fraction(seed, answer.system, answer.question) < holdout else training
        side.append(answer)
    return training, held_out


def exemplar_kind(person_verdict: str, note: str) -> str:
    """`partial` when the note says so, else `correct` for a pass and `incorrect` for a fail."""
    if PARTIAL_NOTE.search(note):
        return "partial"
    return "correct" if person_verdict == "pass" else "incorrect"


def exemplar_why(person_verdict: str, note: str) -> str:
    """The note on one line, cut at a word under `MAX_WHY` characters; a neutral text without one.
    A note read from a decisions file someone else wrote is scrubbed of keys before it is written
    into a battery, as every text tabench writes is."""
    text = " ".join(scrub(note, secrets_in(os.environ)).split())
    if not text:
        return NEUTRAL_WHY[person_verdict]
    if len(text) <= MAX_WHY:
        return text
    return text[: MAX_WHY - 3].rsplit(" ", 1)[0] + "..."


def proposals(training: Iterable[DecidedAnswer]) -> list[NewExemplar]:
    """One proposed exemplar per training disagreement, in the order the answers came."""
    return [
        NewExemplar(
            answer.question,
            exemplar_kind(answer.person_verdict, answer.note),
            answer.answer,
            exemplar_why(answer.person_verdict, answer.note),
            answer.system,
            answer.reviewer,
            answer.person_verdict,
        )
        for answer in training
        if answer.disagrees
    ]

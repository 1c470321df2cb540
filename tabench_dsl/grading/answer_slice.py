"""The slice of the answers a grading grades (`--question`, `--system`, `--tag`, `--limit`,
`--shard`), checked once against the battery into a frozen `AnswerSlice` that the grading, the dry
run and the account of missing answers all read.

The filters come first, so `--resume` skips only among them; `--limit` counts the answers that will
be graded, not those `--resume` skips (they pass through, to be counted as skipped), so each
`--resume --limit N` grades N more. Reading stops once the limit is reached: the rest of the file
is not read.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

import msgspec

from ..core.display import shown
from ..core.errors import UsageError
from .shards import Shard, in_shard

if TYPE_CHECKING:
    from ..core.compiled import CompiledQuestion
    from ..core.records import Answer


class AnswerSlice(msgspec.Struct, frozen=True):
    """What a grading takes of the answers: the questions (`--question`), the questions `--tag`
    selects, the systems (`--system`), one shard (`--shard`), and at most `limit` graded (None: no
    filter of that kind)."""

    questions: frozenset[str] | None = None
    tagged: frozenset[str] | None = None
    systems: frozenset[str] | None = None
    shard: Shard | None = None
    limit: int | None = None

    def wants_question(self, question: str) -> bool:
        """Whether the slice grades answers to `question` (its --question and --tag filters)."""
        in_questions = self.questions is None or question in self.questions
        return in_questions and (self.tagged is None or question in self.tagged)

    def takes(self, system: str, question: str) -> bool:
        """Whether the pair passes the slice's filters (--shard, --question, --tag, --system), as
        `select` tests them (its --limit aside)."""
        if self.shard is not None and not self.shard.holds(system, question):
            return False
        return self.wants_question(question) and (self.systems is None or system in self.systems)

    def select(self, answers: Iterable[Answer], skip: Collection[tuple[str, str]]) -> Iterator[Answer]:
        """The answers of the slice, in file order (module docstring)."""
        left = self.limit
        for answer in in_shard(answers, self.shard):
            if not self.wants_question(answer.question):
                continue
            if self.systems is not None and answer.system not in self.systems:
                continue
            if left is not None and (answer.system, answer.question) not in skip:
                if left == 0:
                    return
                left -= 1
            yield answer


class SliceFlags(msgspec.Struct, frozen=True):
    """The slice options of a grading (a `grade` command line's, read once, before the battery is
    known): `--question`, `--tag`, `--system`, `--shard` and `--limit` (None: not given)."""

    questions: tuple[str, ...] | None = None
    tags: tuple[str, ...] | None = None
    systems: tuple[str, ...] | None = None
    shard: Shard | None = None
    limit: int | None = None


def answer_slice(
    flags: SliceFlags, questions: Mapping[str, CompiledQuestion], *, missing_as_fail: bool = False
) -> AnswerSlice:
    """The slice `flags` name, checked against the battery's `questions`: a --limit below 1, question
    ids or tags the battery lacks, and --missing-as-fail with --limit are usage errors."""
    if flags.limit is not None and flags.limit < 1:
        raise UsageError("--limit must be at least 1")
    if flags.limit is not None and missing_as_fail:
        raise UsageError("--missing-as-fail needs the whole answers file read: it does not go with --limit")
    unknown = sorted(set(flags.questions or ()) - set(questions))
    if unknown:
        raise UsageError(f"--question: the battery has no question {', '.join(shown(q) for q in unknown)}")
    tagged = None
    if flags.tags:
        wanted = set(flags.tags)
        unknown = sorted(wanted - {tag for q in questions.values() for tag in q.tags})
        if unknown:
            raise UsageError(
                f"--tag: no question of the battery has tag {', '.join(shown(t) for t in unknown)}"
            )
        tagged = frozenset(qid for qid, q in questions.items() if wanted.intersection(q.tags))
    return AnswerSlice(
        questions=frozenset(flags.questions) if flags.questions else None,
        tagged=tagged,
        systems=frozenset(flags.systems) if flags.systems else None,
        shard=flags.shard,
        limit=flags.limit,
    )

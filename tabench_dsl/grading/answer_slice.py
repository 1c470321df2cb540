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
    #: The tags `--tag` named (`tagged` holds the questions they select).
    tag_names: frozenset[str] = frozenset()

    @property
    def filters(self) -> bool:
        """Whether the slice takes some answers and not others (--limit aside)."""
        return any(f is not None for f in (self.questions, self.tagged, self.systems, self.shard))

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
    unknown = sorted({question for question in flags.questions or () if question not in questions})
    if unknown:
        raise UsageError(
            f"--question: the battery has no question {named(unknown)} (questions in the battery: "
            f"{named(questions)})"
        )
    tagged = None
    if flags.tags:
        wanted = set(flags.tags)
        known = {tag for q in questions.values() for tag in q.tags}
        unknown = sorted(wanted - known)
        if unknown:
            raise UsageError(
                f"--tag: no question of the battery has tag {named(unknown)} "
                f"(tags in the battery: {named(known) if known else 'none'})"
            )
        tagged = frozenset(qid for qid, q in questions.items() if wanted.intersection(q.tags))
    return AnswerSlice(
        questions=frozenset(flags.questions) if flags.questions else None,
        tagged=tagged,
        tag_names=frozenset(flags.tags or ()),
        systems=frozenset(flags.systems) if flags.systems else None,
        shard=flags.shard,
        limit=flags.limit,
    )


#: How many known names an error about unknown ones lists before "and N more".
NAMES_LISTED = 20


def named(names: Iterable[str]) -> str:
    """`names`, sorted, as a list for a message: at most `NAMES_LISTED`, then how many more."""
    ordered = sorted(names)
    listed = ", ".join(shown(name) for name in ordered[:NAMES_LISTED])
    more = len(ordered) - NAMES_LISTED
    return f"{listed} and {more} more" if more > 0 else listed


def count_selected(
    answers: Iterable[Answer], chosen: AnswerSlice, questions: Mapping[str, CompiledQuestion]
) -> int:
    """How many of `answers` the slice takes (its --limit aside): the total progress counts to.

    Read before grading, so that a `--system` no answer is from, or a `--tag` no answer's question
    carries, is an error like an unknown `--question` (a typo must not grade nothing and exit 0)."""
    selected = 0
    systems: set[str] = set()
    tags: set[str] = set()
    for answer in answers:
        systems.add(answer.system)
        tags.update(questions[answer.question].tags)
        selected += chosen.takes(answer.system, answer.question)
    unknown = sorted((chosen.systems or frozenset()) - systems)
    if unknown:
        raise UsageError(
            f"--system: no answer is from {named(unknown)} "
            f"(systems in the answers: {named(systems) if systems else 'none'})"
        )
    unanswered_tags = sorted(set(chosen.tag_names) - tags)
    if unanswered_tags:
        raise UsageError(
            f"--tag: no answer is to a question tagged {named(unanswered_tags)} "
            f"(tags of the questions answered: {named(tags) if tags else 'none'})"
        )
    return selected

"""Results records read without their texts, for counting (`iter_light_records`).

Counting never looks at an answer, a reason or a reply text: `LightRecord` and its parts name only
what totals, decisions and resume read, so the decoder skips the texts instead of building them,
and the records it yields share their repeated values (a judge, a hash, a tag list, an attempt
list), so a million records fit in a fraction of the memory.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
from collections.abc import Callable, Container, Iterator
from pathlib import Path

import msgspec

from ..core.errors import UsageError
from ..core.jsonl import BadLine, strip_bom
from ..core.records import (
    Attempt,
    AttemptKind,
    Audit,
    Cause,
    Decision,
    JudgeInfo,
    Outcome,
    PanelVote,
    Record,
    Served,
    Tier,
    Tokens,
    record_decoder,
)
from .fast_lines import decoded_again, decoded_blocks_at, decoded_lines, lines_at
from .foreign_results import foreign_file_problem
from .line_ranges import line_ranges, map_ranges, processes_for


def bad_line_reporter(
    path: str | Path, on_problem: Callable[[str], None] | None
) -> Callable[[int, BadLine], None]:
    """What `decoded_lines` calls on a bad line: the line's problem, worded, to `on_problem`. At the
    first, a file that is not a results file at all (an answers file by mistake) stops the command
    with one line saying so (`foreign_results`), not a warning per line."""
    first = True

    def report(number: int, bad: BadLine) -> None:
        nonlocal first
        if first:
            first = False
            foreign = foreign_file_problem(path, number, light_record_decoder)
            if foreign is not None:
                raise UsageError(foreign)
        if on_problem is not None:
            on_problem(_problem(path, number, bad))

    return report


def _problem(path: str | Path, number: int, bad: BadLine) -> str:
    where = f"{number}" if bad.col is None else f"{number}:{bad.col}"
    return f"{path}:{where}: not a result record: {bad.message}"


#: A JSON null as `Raw`: what `LightAttempt.raw` / `.error` hold when there was no text.
RAW_NULL = msgspec.Raw(b"null")


class LightAttempt(msgspec.Struct, gc=False):
    """An `Attempt` as totals read it: a reply or error text is only checked for being there
    (`Raw`, RAW_NULL when absent: its bytes are never decoded)."""

    kind: AttemptKind
    raw: msgspec.Raw
    tokens: Tokens = Tokens()
    cache_hit: bool = False
    error: msgspec.Raw = RAW_NULL
    served: LightServed | None = None


class LightServed(msgspec.Struct, gc=False):
    """`Served` as totals read it: the model that answered (the reply's id is never read)."""

    model: str | None = None


class LightVote(msgspec.Struct, gc=False):
    """A `PanelVote` as totals read it: without its reason, replies and facets."""

    judge: JudgeInfo
    verdict: Outcome
    cause: Cause | None = None
    attempts: list[LightAttempt] = []


class LightAudit(msgspec.Struct, gc=False):
    """An `Audit` as totals read it: its reason is kept (totals list the disagreements)."""

    verdict: Outcome
    judge: JudgeInfo
    reason: str = ""
    cause: Cause | None = None
    attempts: list[LightAttempt] = []
    panel: list[LightVote] = []


class LightRecord(msgspec.Struct, gc=False):
    """A `Record` without the texts totals never read (answer, reason, replies): decoding one
    skips them without building them."""

    system: str
    question: str
    tier: Tier
    verdict: Outcome
    reason: str  # required, as in `Record`: a line without one is no record (its text is dropped)
    prompt_sha256: str
    judge: JudgeInfo
    facets: dict[str, bool] = {}
    cause: Cause | None = None
    attempts: list[LightAttempt] = []
    injection_suspect: bool = False
    tags: list[str] = []
    decision: Decision | None = None
    panel: list[LightVote] = []
    audit: LightAudit | None = None
    repeats: list[LightVote] = []
    #: What graded it (`Record.t1_rule`, `Record.scorer`), which a resume checks: its first read
    #: notes them (`store.resume_checks.GradingsTally`) rather than scan the file's bytes again.
    t1_rule: str | msgspec.UnsetType = msgspec.UNSET
    scorer: str | msgspec.UnsetType = msgspec.UNSET


def _light_attempts(attempts: list[LightAttempt]) -> list[Attempt]:
    return [
        Attempt(
            a.kind,
            "" if a.raw != RAW_NULL else None,
            tokens=a.tokens,
            cache_hit=a.cache_hit,
            error="" if a.error != RAW_NULL else None,
            served=_served(a.served),
        )
        for a in attempts
    ]


def _served(served: LightServed | None) -> Served | None:
    return Served(model=served.model) if served is not None and served.model else None


def _light_votes(votes: list[LightVote]) -> list[PanelVote]:
    return [PanelVote(v.judge, v.verdict, "", v.cause, attempts=_light_attempts(v.attempts)) for v in votes]


light_record_decoder = msgspec.json.Decoder(LightRecord)
#: Distinct attempt shapes `iter_light_records` keeps for sharing (beyond this, lists are new).
_SHAPES_KEPT = 4096


def iter_light_records(
    path: str | Path,
    *,
    on_problem: Callable[[str], None] | None = None,
    on_bad: Callable[[int, BadLine], None] | None = None,
    start: int = 0,
    stop: int | None = None,
) -> Iterator[Record]:
    """Stream the records of a results file as totals and decisions read them: without the texts
    they never look at (answer, reason, reply and error texts are skipped by the decoder, never
    built; an attempt's `raw`/`error` is "" when there was one, None when not), and with repeated
    values shared, so 100,000 answers are counted in tens of megabytes, not hundreds.

    Bad lines are reported to `on_problem` and skipped exactly as `iter_records` does (or handed
    to `on_bad` as they are, with their numbers). `start` and `stop` read only the lines between
    those offsets (`fast_lines.decoded_lines`).
    """
    sharing = _Sharing()
    report = bad_line_reporter(path, on_problem) if on_bad is None else on_bad
    for record in iter_light_structs(path, report, start, stop):
        yield sharing.record(record)


def iter_light_structs(
    path: str | Path,
    on_bad: Callable[[int, BadLine], None] | None = None,
    start: int = 0,
    stop: int | None = None,
) -> Iterator[LightRecord]:
    """The `LightRecord`s `iter_light_records` makes its records of, as decoded (the same lines,
    bad ones handed to `on_bad`, else reported as `iter_light_records` reports them): for a
    reader that needs a `Record` of only some of them (`LightLines.record`), as making one costs
    about as much as decoding the line."""
    report = bad_line_reporter(path, None) if on_bad is None else on_bad
    return decoded_lines(path, light_record_decoder, report, start=start, stop=stop)


class _Sharing:
    """The values light records share: one object for each repeated value, so a million records
    hold each judge, hash, tag list and attempt list once. Readers of these records never change
    them."""

    def __init__(self) -> None:
        self.shared: dict = {}
        self.attempts_seen: dict = {}
        # One empty list and dict for every record that has none: at a million records, a list each
        # is a quarter of the memory.
        self.none_listed: list = []
        self.none_seen: dict = {}

    def same(self, value):
        return self.shared.setdefault(value, value)

    def record(self, record: LightRecord) -> Record:
        """The `Record` a light record stands for (`iter_light_structs`), its repeated values
        shared. Made with its fields in `Record`'s order, not by name: a million of them are made
        in a first read, and naming each field costs a third of making one."""
        facets, tags, shared, none_listed = record.facets, record.tags, self.shared, self.none_listed
        made = Record(
            sys.intern(record.system),
            sys.intern(record.question),
            record.tier,
            record.verdict,
            "",  # reason
            shared.setdefault(record.prompt_sha256, record.prompt_sha256),
            shared.setdefault(record.judge, record.judge),
            "",  # answer
            shared.setdefault(tuple(facets.items()), facets) if facets else self.none_seen,
            record.cause,
            self.attempts(record.attempts) if record.attempts else none_listed,
            none_listed,  # tolerated
            none_listed,  # warnings
            record.injection_suspect,
            "",  # battery
            "",  # time
            shared.setdefault(("tags", *tags), tags) if tags else none_listed,
            record.decision,
        )
        if reviewed(record):
            return msgspec.structs.replace(made, **_reviews(record))
        return made

    def outline(self, record: LightRecord) -> Record:
        """`LightLines.outline`: a `Record` of the fields a cut reads."""
        tags, shared, none_listed = record.tags, self.shared, self.none_listed
        return Record(  # the pair, tier, verdict, reason, prompt and judge, as `Record` orders them
            sys.intern(record.system),
            sys.intern(record.question),
            record.tier,
            record.verdict,
            "",
            shared.setdefault(record.prompt_sha256, record.prompt_sha256),
            shared.setdefault(record.judge, record.judge),
            facets=self.none_seen,
            cause=record.cause,
            attempts=none_listed,
            tolerated=none_listed,
            warnings=none_listed,
            tags=shared.setdefault(("tags", *tags), tags) if tags else none_listed,
            decision=record.decision,
        )

    def attempts(self, light: list[LightAttempt]) -> list[Attempt]:
        """The attempts as `Attempt`s, one list for each shape seen (up to `_SHAPES_KEPT`)."""
        shape = tuple(
            [
                (
                    a.kind,
                    a.raw != RAW_NULL,
                    a.error != RAW_NULL,
                    a.tokens,
                    a.cache_hit,
                    a.served and a.served.model,
                )
                for a in light
            ]
        )
        attempts = self.attempts_seen.get(shape)
        if attempts is None:
            attempts = [
                Attempt(
                    kind,
                    "" if raw else None,
                    tokens=tokens,
                    cache_hit=hit,
                    error="" if error else None,
                    served=Served(model=model) if model else None,
                )
                for kind, raw, error, tokens, hit, model in shape
            ]
            if len(self.attempts_seen) < _SHAPES_KEPT:
                self.attempts_seen[shape] = attempts
        return attempts


class LightLines(_Sharing):
    """Lines decoded one at a time into the records `iter_light_records` gives (`decode`), or
    decoded ones made records (`record`, and `outline`: a record of `light`'s pair, tier, verdict,
    prompt, judge, cause, decision and tags only, for a reader that keeps many records and reads
    no more of them, the report's cut, at a fraction of `record`'s cost), their repeated values
    shared: for a reader that picks the lines or the records itself."""

    def decode(self, line: bytes) -> Record:
        """The light record of one line; `msgspec.DecodeError` or `ValidationError` if it is none."""
        return self.record(light_record_decoder.decode(line))


def reviewed(record: LightRecord) -> bool:
    """Whether a light record carries reviews (a panel's votes, repeats, a blind audit): the part of
    a `Record` made of it only when it has them (`_reviews`), and what a count takes record by record."""
    return bool(record.panel or record.repeats or record.audit is not None)


def _reviews(record: LightRecord) -> dict:
    """The panel's votes, the repeats and the blind audit of a light record, for those it has."""
    extra: dict = {}
    if record.panel:
        extra["panel"] = _light_votes(record.panel)
    if record.repeats:
        extra["repeats"] = _light_votes(record.repeats)
    if record.audit is not None:
        audit = record.audit
        extra["audit"] = Audit(
            audit.verdict,
            audit.reason,
            audit.judge,
            audit.cause,
            _light_attempts(audit.attempts),
            _light_votes(audit.panel),
        )
    return extra


class OutcomeRecord(msgspec.Struct, gc=False):
    """A `Record` as `diff` reads it: the pair, what its outcome stands on (verdict, a decision on
    the line, the prompt a decision is checked against) and who judged it; its reason, which diff
    shows only for the pairs that flip. Every other field is skipped by the decoder, never built."""

    system: str
    question: str
    tier: Tier
    verdict: Outcome
    reason: str  # required, as in `Record`: a line without one is no record
    prompt_sha256: str
    judge: JudgeInfo
    cause: Cause | None = None
    decision: Decision | None = None


outcome_record_decoder = msgspec.json.Decoder(OutcomeRecord)


def iter_outcome_records(
    path: str | Path, *, on_problem: Callable[[str], None] | None = None, stop: int | None = None
) -> Iterator[OutcomeRecord]:
    """Stream the records of a results file (its first `stop` bytes, all when None) as
    `OutcomeRecord`s, bad lines reported to `on_problem` and skipped as `iter_records` does. Two
    reads of the same bytes give the same records: a second pass may pick out what the first left
    behind."""
    return decoded_lines(path, outcome_record_decoder, bad_line_reporter(path, on_problem), stop=stop)


def outcome_record_blocks(
    path: str | Path, *, on_problem: Callable[[str], None] | None = None, stop: int
) -> Iterator[tuple[list[int], list[OutcomeRecord]]]:
    """`iter_outcome_records` of the first `stop` bytes, a block of lines at a time: each block's
    records and the offsets of their lines (`outcome_record_of` decodes one read again)."""
    return decoded_blocks_at(path, outcome_record_decoder, bad_line_reporter(path, on_problem), stop=stop)


def outcome_record_of(line: bytes) -> OutcomeRecord | None:
    """The `OutcomeRecord` of a line read again (`fast_lines.lines_starting_at`; a byte order mark
    dropped), None when it holds none."""
    return decoded_again(outcome_record_decoder, line)


class _Pair(msgspec.Struct):
    system: str
    question: str


_pair_decoder = msgspec.json.Decoder(_Pair)


def iter_records_of(
    path: str | Path, pairs: Container[tuple[str, str]], *, stop: int | None = None
) -> Iterator[Record | tuple[str, str]]:
    """The records of a results file (its first `stop` bytes, all when None) whose (system,
    question) is in `pairs`, decoded whole, in file order; every other line is decoded only as far
    as its pair (the decoder skips the rest). A line of one of `pairs` that is no whole record gives
    its pair instead (a reader that chose `pairs` with a lighter decoder learns that this one saw it
    otherwise); any other line that is not a record is skipped without a word. A large file is read
    over the cores (`line_ranges`: each range's few records sent back, in file order)."""
    size = os.path.getsize(path)
    end = size if stop is None else min(stop, size)
    processes = processes_for(path, 0, end)
    if processes > 1:
        work = functools.partial(_listed_records_of, path, pairs, size)
        return itertools.chain.from_iterable(map_ranges(work, line_ranges(path, processes, 0, end)))
    return _records_of(path, pairs, size, 0, end)


def _listed_records_of(
    path: str | Path, pairs: Container[tuple[str, str]], size: int, start: int, stop: int
) -> list[Record | tuple[str, str]]:
    return list(_records_of(path, pairs, size, start, stop))


def _records_of(
    path: str | Path, pairs: Container[tuple[str, str]], size: int, start: int, stop: int
) -> Iterator[Record | tuple[str, str]]:
    """`iter_records_of` of the lines from `start` to `stop` (the file was `size` bytes): a last
    line that `stop` cuts short (appended after the caller measured the file) is not read."""
    for at, line in lines_at(path, start, stop):
        if at + len(line) == stop < size:
            break  # a line appended after the caller measured the file
        try:
            pair = _pair_decoder.decode(line)
        except (msgspec.DecodeError, RecursionError):
            line = strip_bom(line)  # as `fast_lines.decoded_lines` retries a line
            try:
                pair = _pair_decoder.decode(line)
            except (msgspec.DecodeError, RecursionError):
                continue
        key = (pair.system, pair.question)
        if key in pairs:
            try:
                yield record_decoder.decode(line)
            except (msgspec.DecodeError, RecursionError):
                yield key

"""`grade --resume` refuses a results file it would mix another grading into: one whose records
name another battery (`refuse_another_battery`), another scorer (`check_scorer`), or whose T1
passes another T1 rule made (`check_t1_rule`). `refuse_mixed_resume` makes the three checks; each
reads the file before the index or the file is written, so a refusal changes nothing.

One file of two batteries gives one totals table that mixes them, and the default `--out
results.jsonl` makes that easy: the battery a file's first record names is compared with the one
graded.

One battery's verdicts under two scorers are two gradings with two sets of rules (the scorer's
rules and reply contract are in every prompt): a battery moved from `tabench-1.1` to
`tabench-neutral-1.1` and resumed into its old results file would total both. A record names the
scorer that graded it (`Record.scorer`); a record naming none was written before records named it,
and is refused by nobody.

A results file graded under one T1 rule and resumed under another would hold two rules' verdicts
(docs/language.md, T1 rules): the totals would mix them. `check_t1_rule` reads which rules the
file's T1 records name (a T1 record naming none was written before rules had names, by `v1`) and
refuses, saying both ways on: name the old rule in the manifest, or grade into a new file.

The file is scanned as bytes, not decoded record by record (`recorded_gradings`): in a JSON line
the key `"tier"` with the value `"t1"`, or the keys `"t1_rule"` and `"scorer"` with a string value,
can only appear as the record's own fields (quotes inside a string are escaped, and the one map of
a record, its facets, holds booleans), so counting them is exact and runs at the speed of reading
the file. What the scan found is kept in the index beside the file (`store.results_index`, bound
to the bytes it covers), so a later resume scans only the lines appended since; it is kept only
once nothing is refused, so a refusal changes nothing.

A first resume reads the whole file anyway, for its done pairs and totals: that read notes what
graded each record it decodes (`GradingsTally`), and the scan takes its findings
(`ScanAhead.take_read`) rather than read the bytes again. A file with a line that is not a record
is scanned still (the scan counts what such a line names; the read skips it).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import msgspec

from ..core.compiled import CompiledBattery
from ..core.display import shown
from ..core.errors import UsageError
from ..core.jsonl import BadLine, decode_line
from .light_records import LightRecord
from .line_ranges import line_ranges, map_ranges, processes_for
from .read_ahead import ReadAhead
from .results_index import Extent, measure, open_index

#: A T1 tier (`"tier":"t1"`, its first group "ier") or a T1 rule (`"t1_rule":"NAME"`, the name
#: its second group), found in one search: both keys start `"t`, and neither match can overlap
#: the other (a tier's match ends in `"t1"`, never followed by the `_` a rule's key has).
T1_TIER_OR_RULE = re.compile(rb'"t(?:(ier)"\s*:\s*"t1"|1_rule"\s*:\s*"([^"\\]*)")')
#: A scorer's name as JSON writes it (escapes kept, decoded as JSON).
_SCORER = re.compile(rb'"scorer"\s*:\s*("(?:[^"\\]|\\.)*")')
#: Bytes read at a time, cut after their last line break (a record is one line).
_BLOCK = 1 << 22
#: The index's name for what a scan found.
_GRADINGS_VARIANT = "gradings:1"


class Found(msgspec.Struct, array_like=True):
    """What a scan of results lines found: T1 records, those naming a rule, the rules and the
    scorers named."""

    tiers: int = 0
    named: int = 0
    rules: list[str] = msgspec.field(default_factory=list)
    scorers: list[str] = msgspec.field(default_factory=list)


class RecordedGradings(msgspec.Struct):
    """What a results file's records say graded them: the T1 rules its T1 records name (`v1` for
    one naming none) and the scorers its records name (none for records written before they did)."""

    t1_rules: set[str]
    scorers: set[str]


class GradingsTally:
    """What a read of a file's records, line by line, finds of what graded them: what a scan of
    the same lines finds (`Found`), from decoded records. The totals' first read of a resume
    notes every record it decodes here (`review.streamed_totals.FirstRead`), so that the file
    is read once for both (`ScanAhead.take_read`)."""

    def __init__(self) -> None:
        self.tiers = 0
        self.named = 0
        self.rules: set[str] = set()
        self.scorers: set[str] = set()

    def note(self, record: LightRecord) -> None:
        if record.tier == "t1":
            self.tiers += 1
        if record.t1_rule is not msgspec.UNSET:
            self.named += 1
            self.rules.add(record.t1_rule)
        if record.scorer is not msgspec.UNSET:
            self.scorers.add(record.scorer)

    def merge(self, later: GradingsTally) -> None:
        self.tiers += later.tiers
        self.named += later.named
        self.rules |= later.rules
        self.scorers |= later.scorers

    def found(self) -> Found:
        return Found(self.tiers, self.named, sorted(self.rules), sorted(self.scorers))


def _gradings(found: Found) -> RecordedGradings:
    rules = {*found.rules, "v1"} if found.tiers > found.named else set(found.rules)
    return RecordedGradings(rules, set(found.scorers))


def recorded_gradings(path: Path, *, keep: bool = True, ahead: ScanAhead | None = None) -> RecordedGradings:
    """The T1 rules and scorers the records of the results file at `path` name. Read through the
    index: only the lines appended since it was kept are scanned (and, with `keep`, what the scan
    found is kept again for the file as it is); `ahead`: the scan begun before (`ScanAhead`)."""
    found, keep_found = _scanned(path, ahead)
    if keep:
        keep_found()
    return _gradings(found)


def recorded_t1_rules(path: Path, *, keep: bool = True, ahead: ScanAhead | None = None) -> set[str]:
    """The T1 rules the T1 records of the results file at `path` name (`v1` for one naming none)."""
    return recorded_gradings(path, keep=keep, ahead=ahead).t1_rules


def _scanned(path: Path, ahead: ScanAhead | None = None) -> tuple[Found, Callable[[], None]]:
    """What the file's lines name, and what keeps it in the index for the file as it is (called
    only once nothing is refused). `ahead`: the scan begun before, used while the file is still
    the one it was begun on."""
    if ahead is not None and ahead.now is not None and measure(path) == ahead.now:
        return ahead.found()
    if ahead is not None:
        ahead.cancel()
    return ScanAhead(path, begin=False).found()


class ScanAhead:
    """The scan of a results file's lines the index holds no scan of (`_scanned`), begun now:
    over the ranges `read_ahead.ReadAhead` shares with a forked child (`begin`: `grade --resume`
    begins it before it compiles the battery, which needs a core of its own), or when asked
    (`found`)."""

    def __init__(self, path: Path, *, begin: bool = True) -> None:
        self.path = path
        self.now = now = measure(path)
        self.index = open_index(path) if now is not None else None
        self.kept: Found | None = None
        self.start = 0
        if now is not None and self.index is not None:
            loaded = self.index.load_prefix(_GRADINGS_VARIANT)
            self.kept = _decode(loaded[1]) if loaded is not None else None
            self.start = loaded[0].end if self.kept is not None and loaded is not None else 0
        self.fresh = self.kept is None or now is None or self.start != now.end
        stop = None if now is None else now.end
        work = functools.partial(_scan_range, path)
        self.ahead = ReadAhead(path, work, self.start, stop) if self.fresh and begin else None
        #: What a read of every line found in place of this scan (`take_read`), or None.
        self.read: Found | None = None

    def cancel(self) -> None:
        if self.ahead is not None:
            self.ahead.cancel()

    def take_read(self, tally: GradingsTally, extent: Extent) -> None:
        """Take what a read of every line of the file as it was at `extent` found (`tally`) in
        place of the scan, when the file was as this scan measured it then."""
        if self.fresh and self.now is not None and extent == self.now:
            self.cancel()
            self.read = tally.found()

    def found(self) -> tuple[Found, Callable[[], None]]:
        """What the scan found, and what keeps it in the index (see `_scanned`)."""
        now, index, kept = self.now, self.index, self.kept
        if now is None:
            self.cancel()
            return _scan(self.path, 0, None, Found()), lambda: None
        found = kept
        if self.fresh and self.read is not None:
            found = self.read
        elif self.fresh:
            parts = self.ahead.results() if self.ahead is not None else None
            found = _scan(self.path, self.start, now.end, kept or Found(), parts)
        assert found is not None
        body = msgspec.msgpack.encode(found)
        fresh = self.fresh

        def keep_found() -> None:
            if fresh and index is not None:
                index.store(_GRADINGS_VARIANT, now, body)

        if now.size > now.end:  # a torn last line: scanned as the stream reads it, never kept
            found = _scan(self.path, now.end, None, msgspec.msgpack.decode(body, type=Found))
        return found, keep_found


def _decode(body: bytes) -> Found | None:
    try:
        return msgspec.msgpack.decode(body, type=Found)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _scan(path: Path, start: int, end: int | None, found: Found, parts: list[Found] | None = None) -> Found:
    """`found` with the T1 records, rules and scorers of the file's bytes from `start` to `end`
    (None: to its end) added: its ranges of whole lines scanned side by side
    (`line_ranges.processes_for`), their counts added and their names put together; `parts`:
    those ranges' scans, when done already (`ScanAhead`)."""
    if parts is None:
        ranges = line_ranges(path, processes_for(path, start, end), start, end)
        parts = map_ranges(functools.partial(_scan_range, path), ranges)
    found.tiers += sum(part.tiers for part in parts)
    found.named += sum(part.named for part in parts)
    found.rules = sorted({*found.rules, *(rule for part in parts for rule in part.rules)})
    found.scorers = sorted({*found.scorers, *(scorer for part in parts for scorer in part.scorers)})
    return found


def _scan_range(path: Path, start: int, end: int) -> Found:
    """The T1 records, rules and scorers of the file's bytes from `start` to `end`: read a block at
    a time, each searched up to its last line break (`_whole_lines`) where it lies, never copied."""
    found = Found()
    rules: set[str] = set()
    scorers: set[str] = set()
    with path.open("rb") as f:
        for block, cut in _whole_lines(f, start, end):
            for tier, rule in T1_TIER_OR_RULE.findall(block, 0, cut):
                if tier:
                    found.tiers += 1
                else:
                    found.named += 1
                    rules.add(rule.decode("utf-8", "replace"))
            _note_scorers(block, cut, scorers)
    found.rules = sorted(rules)
    found.scorers = sorted(scorers)
    return found


def _whole_lines(f: BinaryIO, start: int, end: int) -> Iterator[tuple[bytes, int]]:
    """The bytes of `f` from `start` to `end` as blocks of whole lines: each block read and the
    length of its lines (up to its last line break; the last block's to its end). The next block
    is read from there, so no block is joined to the rest of the one before (a copy of each); a
    line longer than a block is read in a block twice as long."""
    size, at = _BLOCK, start
    while at < end:
        f.seek(at)
        block = f.read(min(size, end - at))
        if not block:
            return
        last = at + len(block) >= end or len(block) < min(size, end - at)
        cut = len(block) if last else block.rfind(b"\n") + 1
        if cut == 0:  # no line ends in the block: read more of it at once
            size *= 2
            continue
        yield block, cut
        at, size = at + cut, _BLOCK


def _note_scorers(lines: bytes, end: int, scorers: set[str]) -> None:
    """Add to `scorers` those the first `end` bytes of `lines` name. Nearly every record names a
    scorer, and a file one or two: counting the key and the scorers already known as tabench writes
    them (`"scorer":"NAME"`) is a fast byte count, and only a block where some `"scorer"` is not one
    of those is searched."""
    keys = lines.count(b'"scorer"', 0, end)
    if keys == sum(lines.count(b'"scorer":' + msgspec.json.encode(known), 0, end) for known in scorers):
        return
    for quoted in set(_SCORER.findall(lines, 0, end)):
        try:
            scorers.add(msgspec.json.decode(quoted, type=str))
        except msgspec.DecodeError:
            continue  # not a whole JSON string: a bad line, reported by its readers


def refuse_mixed_resume(
    out: Path, compiled: CompiledBattery, *, keep: bool = True, ahead: ScanAhead | None = None
) -> None:
    """`UsageError` (exit 2) when resuming the grading of `compiled` into `out` would mix it with
    another battery's, another scorer's or another T1 rule's records. Nothing to check when `out`
    is missing. Without `keep` the index is read but never written (a dry run writes nothing).
    `ahead`: the scan of `out` begun before the battery was compiled (`ScanAhead`)."""
    if not out.is_file():
        if ahead is not None:
            ahead.cancel()
        return
    try:
        refuse_another_battery(out, compiled.name)
    except UsageError:
        if ahead is not None:
            ahead.cancel()
        raise
    found, keep_found = _scanned(out, ahead)
    recorded = _gradings(found)
    check_scorer(out, compiled.scorer, recorded.scorers)
    if compiled.t1:
        check_t1_rule(out, compiled.t1_rule, recorded.t1_rules)
    if keep:
        keep_found()


def check_scorer(out: Path, scorer: str, recorded: set[str]) -> None:
    """Refuse (`UsageError`, exit 2) to resume `out` under `scorer` when its records (`recorded`:
    the scorers they name) name another."""
    others = sorted(recorded - {scorer})
    if others:
        raise UsageError(
            f"{shown(str(out))} holds results graded under scorer {shown(', '.join(others))}, and the "
            f"battery's scorer is {shown(scorer)}: --resume would mix the two in one file; give this "
            "grading another --out, or name the old scorer in the manifest to go on with this file"
        )


def check_t1_rule(path: Path, rule: str, recorded: set[str]) -> None:
    """Refuse (`UsageError`, exit 2) to resume `path` under T1 rule `rule` when its T1 records name
    another rule (`recorded`: the rules they name)."""
    others = sorted(recorded - {rule})
    if others:  # the rules' names as the file's records spell them: shown, as the scorers' are
        raise UsageError(
            f"{shown(str(path))} holds T1 passes of rule {shown(', '.join(others))}, and the battery's "
            f"T1 rule is {rule}: --resume would mix the two. To go on with this file, name the old "
            f"rule in the manifest (t1: {{rule: {shown(others[0])}}}); or grade into a new results file "
            "(--out NEW.jsonl) without --resume"
        )


class _RecordBattery(msgspec.Struct):
    """The battery a result record names (the other fields are not decoded)."""

    system: str
    question: str
    battery: str = ""


#: How many lines of a results file `refuse_another_battery` looks at for a record.
_LINES_LOOKED_AT = 64


def refuse_another_battery(out: Path, battery: str) -> None:
    """`UsageError` when `--resume` would append to `out` the records of another battery than the
    one its records name (module docstring)."""
    decoder = msgspec.json.Decoder(_RecordBattery)
    with open(out, "rb") as lines:
        for line in itertools.islice(lines, _LINES_LOOKED_AT):
            try:
                named = decode_line(decoder, line).battery
            except BadLine:
                continue
            if named and named != battery:
                raise UsageError(
                    f"{shown(str(out))} holds the results of battery {shown(named)}, not {shown(battery)}: "
                    "--resume would mix the two in one file; give this grading another --out"
                )
            return

"""`diff A B` read from the two files in bounded memory: the same `Diff` as `diff.diff_records` of
both files' standing records, without ever holding a record.

A diff needs per pair only its outcome (human decisions applied) and who judged it, and the
reasons of the pairs that flip. So each file is streamed once as `OutcomeRecord`s (the decoder
skips the answer, the replies and every other text) into one small int per pair, kept in a
`pair_table.PairTable` (a 4-byte cell, no Python object): the pair is its system's and its
question's ids (`Names`, shared by both files) and its value packs the outcome with the judge's
slot. The records a decision names are the only ones held (a decision is checked against its
record's prompt and verdict, by `decisions.apply_decisions` itself). Both sides are then walked
once in (system, question) order (`_Walked`), and once the flips are known, their reasons are read
again from their lines alone (each pair keeps the number of its standing record, each record the
offset of its line: 12 bytes a record). Two files of ten million records are diffed in 0.83 GB
(bench/scale_bench.py, one loaded run).
"""

from __future__ import annotations

import functools
import operator
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from pathlib import Path

from ..core.errors import UsageError
from ..core.records import Decision, JudgeInfo, Record
from ..store.decisions import decisions_path, load_decisions
from ..store.fast_lines import lines_starting_at
from ..store.light_records import OutcomeRecord, iter_records_of, outcome_record_blocks, outcome_record_of
from ..store.line_ranges import processes_for, side_by_side
from ..store.pair_table import PairTable
from .decisions import StaleDecision, apply_decisions
from .diff import Diff, Flip, Pair, diff_of_table, stated_reason

#: The outcomes, by the code a pair's value keeps in its two low bits.
OUTCOMES = ("pass", "fail", "adjudicate", "error")
_CODE = {name: code for code, name in enumerate(OUTCOMES)}
#: Bits of a pair's number that hold its question's id (the system's id is above them).
_QUESTION_BITS = 32
_QUESTION_MASK = (1 << _QUESTION_BITS) - 1


class Names:
    """The systems and questions of both files, each with an id, so a pair is one int."""

    def __init__(self) -> None:
        self.systems: dict[str, int] = {}
        self.questions: dict[str, int] = {}
        self._by_id: tuple[list[str], list[str]] | None = None  # the names by id, once asked for

    def key(self, system: str, question: str) -> int:
        """The number of the pair (`system`, `question`), its names given ids when new."""
        s = self.systems.get(system)
        if s is None:
            s = self.systems[system] = len(self.systems)
            self._by_id = None
        q = self.questions.get(question)
        if q is None:
            q = self.questions[question] = len(self.questions)
            self._by_id = None
        return s << _QUESTION_BITS | q

    def known(self, system: str, question: str) -> int | None:
        """The number of a pair whose names both have ids, else None."""
        s, q = self.systems.get(system), self.questions.get(question)
        return None if s is None or q is None else s << _QUESTION_BITS | q

    def numbering(self, other: Names) -> tuple[list[int], list[int]]:
        """Each of `other`'s system ids and question ids as the id this one gives its name (names
        new here given ids)."""
        systems = [self._number(self.systems, name) for name in other.systems]
        questions = [self._number(self.questions, name) for name in other.questions]
        return systems, questions

    def renumbered(self, key: int, numbering: tuple[list[int], list[int]]) -> int:
        """A pair's number `key` from the names `numbering` came from, as this one numbers it."""
        systems, questions = numbering
        return systems[key >> _QUESTION_BITS] << _QUESTION_BITS | questions[key & _QUESTION_MASK]

    def _number(self, ids: dict[str, int], name: str) -> int:
        found = ids.get(name)
        if found is None:
            found = ids[name] = len(ids)
            self._by_id = None
        return found

    def pair(self, key: int) -> Pair:
        if self._by_id is None:  # dicts keep the order their ids were given in
            self._by_id = list(self.systems), list(self.questions)
        systems, questions = self._by_id
        return Pair(systems[key >> _QUESTION_BITS], questions[key & _QUESTION_MASK])


def _ranks(ids: dict[str, int]) -> list[int]:
    """Each id's place among the names in sorted order."""
    rank = [0] * len(ids)
    for place, name in enumerate(sorted(ids)):
        rank[ids[name]] = place
    return rank


@dataclass
class Side:
    """One file as the diff reads it: per pair (its system's and its question's ids),
    `judge slot * 4 + outcome code` (slot 0: no judge counted, else `judges[slot - 1]`), the
    decisions standing on the pairs they name, and what `warn_run_problems` says of a
    `viewer.run.Run` (`problems`, `stale`)."""

    path: Path
    size: int
    codes: PairTable
    judges: list[str]
    decided: dict[int, Decision]
    problems: list[str] = field(default_factory=list)
    stale: list[StaleDecision] = field(default_factory=list)
    #: Per pair, the number of its standing record's line among the records read (`offsets`).
    places: PairTable = field(default_factory=PairTable)
    #: The offset of each record's line, in the order read.
    offsets: array = field(default_factory=lambda: array("Q"))

    def forget_codes(self) -> None:
        """Let go of the pairs' outcomes, once both sides are walked (at ten million records a
        hundred megabytes a side, not needed by what is left of the diff)."""
        self.codes = PairTable()

    def forget_places(self) -> None:
        """Let go of where each pair's standing record is, once the flips' reasons are read."""
        self.places, self.offsets = PairTable(), array("Q")

    def reasons(self, keys: set[int], names: Names) -> dict[int, str]:
        """The reason each pair of `keys` stands on (`diff.stated_reason`), read again from the
        line of its standing record (only those lines are read)."""
        found: dict[int, str] = {}
        at = {key: self.offsets[self.places.get(key >> _QUESTION_BITS, key & _QUESTION_MASK)] for key in keys}
        in_file_order = sorted(keys, key=at.__getitem__)
        lines = lines_starting_at(self.path, list(map(at.__getitem__, in_file_order)))
        for key, line in zip(in_file_order, lines, strict=True):
            record = outcome_record_of(line)
            if record is None or names.known(record.system, record.question) != key:
                # the file was rewritten between the two reads (not appended to)
                raise UsageError(f"{self.path} changed while diff read it: run the diff again")
            found[key] = stated_reason(self.decided.get(key, record.decision), record.reason)
        return found


def read_side(path: str | Path, names: Names) -> Side:
    """Read one results file as `viewer.run.load_run` would for a diff, raising what it raises:
    `UsageError` for a missing file, one whose every line is bad, or a bad decisions file."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{path}: no such results file")
    try:
        decisions, failed = load_decisions(decisions_path(path)), None
    except UsageError as exc:  # raised after the results are read, where `load_run` raises it
        decisions, failed = [], exc
    named = {names.key(d.system, d.question) for d in decisions}
    side = Side(path, path.stat().st_size, PairTable(), [], {})
    held = _read_codes(side, names, named)
    if not side.codes and side.problems:
        raise UsageError(f"{side.problems[0]} (is this a results file written by `tabench grade`?)")
    if failed is not None:
        raise failed
    if decisions:
        _apply(side, names, held, decisions)
    return side


def _read_codes(side: Side, names: Names, named: set[int]) -> dict[int, OutcomeRecord]:
    """Fill `side.codes` from its file; the standing records of the pairs in `named`. Records come
    a batch at a time (`outcome_record_blocks`); each record's code is kept in file order, each
    batch's pairs put in the table of places at once (`PairTable.put_many`), and the pairs' codes
    taken from their last records at the end (`PairTable.mapped`): one table written, in C."""
    held = {}
    codes = _Codes(side.judges)
    places, offsets = side.places, side.offsets
    record_codes = array("I")
    system_ids, question_ids = names.systems, names.questions
    read = outcome_record_blocks(side.path, on_problem=side.problems.append, stop=side.size)
    for block_offsets, records in read:
        block_systems, block_questions = array("I"), array("I")
        for record in records:
            s, q = system_ids.get(record.system), question_ids.get(record.question)
            if s is None or q is None:
                key = names.key(record.system, record.question)
                s, q = key >> _QUESTION_BITS, key & _QUESTION_MASK
            block_systems.append(s)
            block_questions.append(q)
            code = codes[record.tier, record.cause, record.judge, record.verdict]
            decision = record.decision
            if decision is not None:  # a decision on the record's line stands
                code = code & ~3 | _CODE[decision.verdict]
            record_codes.append(code)
            if named and (s << _QUESTION_BITS | q) in named:
                held[s << _QUESTION_BITS | q] = record
        first = len(offsets)
        places.put_many(block_systems, block_questions, range(first, first + len(records)))
        offsets.extend(block_offsets)
    side.codes = places.mapped(record_codes)
    return held


class _Codes(dict):
    """(tier, cause, judge, verdict) -> `judge slot * 4 + outcome code`, each made once (its judge
    given a slot when first met: slots are numbered, and `judges` named, in the order of the
    first record each judge graded, whatever other fields it came with)."""

    def __init__(self, judges: list[str]) -> None:
        super().__init__()
        self.judges = judges
        self.slots: dict[JudgeInfo, int] = {}
        self.slot_of_name: dict[str, int] = {}

    def __missing__(self, coded: tuple[str, str | None, JudgeInfo, str]) -> int:
        """The code of records like `coded`, made and kept."""
        tier, cause, judge, verdict = coded
        slot = 0
        if tier == "t2" and cause != "missing":
            slot = self.slots.get(judge, 0)
            if not slot:
                name = judge.describe()
                slot = self.slots[judge] = self.slot_of_name.setdefault(name, len(self.slot_of_name) + 1)
                if slot > len(self.judges):
                    self.judges.append(name)
        code = self[coded] = slot << 2 | _CODE[verdict]
        return code


def _apply(side: Side, names: Names, held: dict[int, OutcomeRecord], decisions: list[Decision]) -> None:
    """Apply the decisions to the standing records they name, as `load_run` applies them."""
    standing = {key: _as_record(record) for key, record in held.items()}
    if any(d.is_audit and isinstance(d.answer_sha256, str) for d in decisions):
        # An audit is stale when its answer changed: those records are read whole, for the answer,
        # and only those (the other lines decoded as far as their pair).
        audited = {(d.system, d.question) for d in decisions if d.is_audit}
        for record in iter_records_of(side.path, audited, stop=side.size):
            if isinstance(record, Record):  # a line only the light decoder takes keeps its light record
                key = names.key(record.system, record.question)
                if key in standing:
                    standing[key] = record
    applied = apply_decisions(standing.values(), decisions, stale=side.stale)
    for key, record in zip(standing, applied, strict=True):
        if record.decision is not None:
            side.decided[key] = record.decision
            s, q = key >> _QUESTION_BITS, key & _QUESTION_MASK
            side.codes.put(s, q, (side.codes.get(s, q) & ~3) | _CODE[record.decision.verdict])


def _as_record(light: OutcomeRecord) -> Record:
    return Record(
        light.system,
        light.question,
        light.tier,
        light.verdict,
        "",
        light.prompt_sha256,
        light.judge,
        cause=light.cause,
        decision=light.decision,
    )


def diff_files(a: str | Path, b: str | Path) -> tuple[Diff, Side, Side]:
    """The diff of the results files `a` and `b` (named as given), with each side's problems.
    Large files are read side by side, each in a process of its own (`line_ranges`)."""
    names = Names()
    apart = processes_for(a) > 1
    left, right = _read_sides(a, b, names) if apart else (read_side(a, names), read_side(b, names))
    walked = _Walked(names, left.codes, right.codes)
    for side in (left, right):
        side.forget_codes()
    flipped = walked.flipped()
    diff = diff_of_table(
        walked.table(),
        a_name=str(a),
        b_name=str(b),
        only_in_a=[names.pair(key) for key in walked.only_in_a],
        only_in_b=[names.pair(key) for key in walked.only_in_b],
        a_judges=[left.judges[slot - 1] for slot in walked.a_slots],
        b_judges=[right.judges[slot - 1] for slot in walked.b_slots],
    )
    del walked
    keys = {key for key, _, _ in flipped}
    if apart and keys:
        reasons_a, reasons_b = side_by_side(
            [functools.partial(side.reasons, keys, names) for side in (left, right)]
        )
    else:
        reasons_a, reasons_b = left.reasons(keys, names), right.reasons(keys, names)
    del keys
    for side in (left, right):
        side.forget_places()
    diff.flips = [
        Flip(*_names(names.pair(key)), vx, vy, reasons_a[key], reasons_b[key]) for key, vx, vy in flipped
    ]
    return diff, left, right


def _read_sides(a: str | Path, b: str | Path, names: Names) -> tuple[Side, Side]:
    """`read_side` of `a` here and of `b` in a forked process at the same time, `b`'s names then
    numbered as `names` numbers them (`a`'s first, as one read after the other numbers them)."""
    theirs = Names()

    def read_b() -> tuple[Side, Names]:
        return read_side(b, theirs), theirs

    def read_a() -> tuple[Side, Names]:
        return read_side(a, names), names

    (left, _), (right, theirs) = side_by_side([read_a, read_b])
    numbering = names.numbering(theirs)
    if not all(ids == list(range(len(ids))) for ids in numbering):  # else both met the names alike
        right.codes = right.codes.renumbered(*numbering)
        right.places = right.places.renumbered(*numbering)
        right.decided = {
            names.renumbered(key, numbering): decision for key, decision in right.decided.items()
        }
    return left, right


class _Walked:
    """Both sides' pairs walked once in (system, question) order, as the names sort: the pairs in
    both with their outcome codes (in arrays: a question id, a byte a side; the systems as runs,
    a pair's number made only for the pairs that flip), the pairs only one side has, and
    the judge slots of each side in the order of the first pair each judged (as `diff.judges_of`
    names them from records sorted by pair). A system's pairs are taken a row at a time
    (`PairTable.cells_at`), and split and coded by `map` and `compress`, not one by one."""

    def __init__(self, names: Names, left: PairTable, right: PairTable) -> None:
        self.questions, self.a, self.b = array("I"), array("B"), array("B")
        self.runs: list[tuple[int, int]] = []  # (system id, pairs in both), in order
        self.only_in_a: list[int] = []
        self.only_in_b: list[int] = []
        a_slots: dict[int, None] = {}
        b_slots: dict[int, None] = {}
        question_rank = _ranks(names.questions)
        by_name = sorted(range(len(question_rank)), key=question_rank.__getitem__)  # question ids
        systems = left.systems() | right.systems()
        for system in sorted(names.systems):
            s = names.systems[system]
            if s not in systems:
                continue
            questions, xs, ys = _row_pairs(s, left, right, by_name, question_rank)
            x_cells, y_cells = dict.fromkeys(xs), dict.fromkeys(ys)  # the few distinct, first met first
            a_slots.update(dict.fromkeys(_judge_slots(x_cells)))
            b_slots.update(dict.fromkeys(_judge_slots(y_cells)))
            pair_of = functools.partial(map, operator.or_, repeat(s << _QUESTION_BITS))
            if 0 in x_cells or 0 in y_cells:  # some pairs on one side only
                has_x, has_y = list(map(bool, xs)), list(map(bool, ys))
                both = list(map(operator.and_, has_x, has_y))
                self.only_in_a.extend(pair_of(compress(questions, map(operator.gt, has_x, has_y))))
                self.only_in_b.extend(pair_of(compress(questions, map(operator.lt, has_x, has_y))))
                questions, xs, ys = (list(compress(cells, both)) for cells in (questions, xs, ys))
            self.questions.extend(questions)
            self.runs.append((s, len(questions)))
            self.a.extend(map(_outcome_codes(x_cells).__getitem__, xs))
            self.b.extend(map(_outcome_codes(y_cells).__getitem__, ys))
        self.a_slots = [slot for slot in a_slots if slot > 0]
        self.b_slots = [slot for slot in b_slots if slot > 0]

    def table(self) -> dict[tuple[str, str], int]:
        """How many pairs in both had each (A's, B's) outcome, in the order first met
        (`diff.diff_of_table`), counted in C."""
        counted = Counter(zip(self.a, self.b, strict=True))
        return {(OUTCOMES[x], OUTCOMES[y]): count for (x, y), count in counted.items()}

    def flipped(self) -> list[tuple[int, str, str]]:
        """(pair, A's outcome, B's outcome) of each pair in both whose outcome differs, in order."""
        differ = list(map(operator.ne, self.a, self.b))
        systems = chain.from_iterable(repeat(s, count) for s, count in self.runs)
        keys = map(
            operator.or_,
            map(operator.lshift, compress(systems, differ), repeat(_QUESTION_BITS)),
            compress(self.questions, differ),
        )
        found = zip(keys, compress(self.a, differ), compress(self.b, differ), strict=True)
        return [(key, OUTCOMES[x], OUTCOMES[y]) for key, x, y in found]


def _row_pairs(
    s: int, left: PairTable, right: PairTable, by_name: list[int], rank: list[int]
) -> tuple[list[int], list[int], list[int]]:
    """The questions that system `s` has a pair of on either side, as the names sort, and each
    side's cells of them (value + 1; 0: none). A system that answered most questions takes every
    question's cells in name order and keeps those held (no sort); one that answered few sorts
    its own."""
    held_x, held_y = left.questions_of(s), right.questions_of(s)
    if 8 * (len(held_x) + len(held_y)) < len(by_name):
        questions = sorted(set(held_x).union(held_y), key=rank.__getitem__)
        return questions, left.cells_at(s, questions), right.cells_at(s, questions)
    xs, ys = left.cells_at(s, by_name), right.cells_at(s, by_name)
    either = list(map(operator.or_, xs, ys))
    if 0 not in either:
        return by_name, xs, ys
    return list(compress(by_name, either)), list(compress(xs, either)), list(compress(ys, either))


def _outcome_codes(cells: Iterable[int]) -> dict[int, int]:
    """The outcome code of each cell (a pair's value + 1: `judge slot * 4 + outcome code` + 1)."""
    return {cell: (cell - 1) & 3 for cell in cells if cell}


def _judge_slots(cells: Iterable[int]) -> list[int]:
    """The judge slot of each pair held (a cell not 0), in order."""
    return [(cell - 1) >> 2 for cell in cells if cell]


def _names(pair: Pair) -> tuple[str, str]:
    return pair.system, pair.question

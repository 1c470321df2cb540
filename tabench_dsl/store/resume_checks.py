"""`grade --resume` refuses a results file it would mix another grading into: one whose records
name another battery (`refuse_another_battery`), or whose T1 passes another T1 rule made
(`check_t1_rule`). Both are read before the index or the file is written, so a refusal changes
nothing.

One file of two batteries gives one totals table that mixes them, and the default `--out
results.jsonl` makes that easy: the battery a file's first record names is compared with the one
graded.

A results file graded under one T1 rule and resumed under another would hold two rules' verdicts
(docs/language.md, T1 rules): the totals would mix them. `check_t1_rule` reads which rules the
file's T1 records name (a T1 record naming none was written before rules had names, by `v1`) and
refuses, saying both ways on: name the old rule in the manifest, or grade into a new file.

The file is scanned as bytes, not decoded record by record: in a JSON line the key `"tier"` with
the value `"t1"`, or the key `"t1_rule"`, can only appear as the record's own fields (quotes inside
a string are escaped), so counting them is exact and runs at the speed of reading the file. What
the scan found is kept in the index beside the file (`store.results_index`, bound to the bytes it
covers), so a later resume scans only the lines appended since.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path

import msgspec

from ..core.display import shown
from ..core.errors import UsageError
from ..core.jsonl import BadLine, decode_line
from .results_index import measure, open_index

_T1_TIER = re.compile(rb'"tier"\s*:\s*"t1"')
_T1_RULE = re.compile(rb'"t1_rule"\s*:\s*"([^"\\]*)"')
#: Bytes read at a time, cut after their last line break (a record is one line).
_BLOCK = 1 << 22


#: The index's name for what `recorded_t1_rules` found.
_RULES_VARIANT = "t1-rules:1"


class _T1Names(msgspec.Struct, array_like=True):
    """What a scan of results lines found: T1 records, those naming a rule, the rules named."""

    tiers: int = 0
    named: int = 0
    rules: list[str] = msgspec.field(default_factory=list)

    def rules_named(self) -> set[str]:
        return {*self.rules, "v1"} if self.tiers > self.named else set(self.rules)


def recorded_t1_rules(path: Path, *, keep: bool = True) -> set[str]:
    """The T1 rules the T1 records of the results file at `path` name (`v1` for one naming none).
    Read through the index: only the lines appended since it was kept are scanned (and, with
    `keep`, what the scan found is kept again for the file as it is)."""
    names, keep_names = _t1_names(path)
    if keep:
        keep_names()
    return names.rules_named()


def _t1_names(path: Path) -> tuple[_T1Names, Callable[[], None]]:
    """What the file's lines name, and what keeps it in the index for the file as it is (called
    only once nothing is refused: a refusal changes nothing)."""
    now = measure(path)
    index = open_index(path) if now is not None else None
    if now is None or index is None:
        return _scan(path, 0, None, _T1Names()), lambda: None
    found = index.load_prefix(_RULES_VARIANT)
    kept = _decode(found[1]) if found is not None else None
    start = found[0].end if kept is not None and found is not None else 0
    names = _scan(path, start, now.end, kept or _T1Names()) if kept is None or start != now.end else kept
    body = msgspec.msgpack.encode(names)

    def keep_names() -> None:
        if kept is None or start != now.end:
            index.store(_RULES_VARIANT, now, body)

    if now.size > now.end:  # a torn last line: scanned as the stream reads it, never kept
        names = _scan(path, now.end, None, names)
    return names, keep_names


def _decode(body: bytes) -> _T1Names | None:
    try:
        return msgspec.msgpack.decode(body, type=_T1Names)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _scan(path: Path, start: int, end: int | None, names: _T1Names) -> _T1Names:
    """`names` with the T1 records and rules of the file's bytes from `start` to `end` (None: to
    its end) added."""
    rules = set(names.rules)
    with path.open("rb") as f:
        f.seek(start)
        left = None if end is None else end - start
        rest = b""
        while True:
            block = f.read(_BLOCK if left is None else min(_BLOCK, left))
            if left is not None:
                left -= len(block)
            data = rest + block
            cut = data.rfind(b"\n") + 1 if block else len(data)
            lines, rest = data[:cut], data[cut:]
            names.tiers += len(_T1_TIER.findall(lines))
            for match in _T1_RULE.finditer(lines):
                names.named += 1
                rules.add(match[1].decode("utf-8", "replace"))
            if not block:
                break
    names.rules = sorted(rules)
    return names


def check_t1_rule(out: str | Path, rule: str, *, enabled: bool = True, keep: bool = True) -> None:
    """Refuse (`UsageError`, exit 2) to resume `out` under T1 rule `rule` when its T1 records name
    another rule. Nothing to check when T1 is off or the file is missing. Without `keep` the index
    is read but never written (a dry run writes nothing)."""
    path = Path(out)
    if not enabled or not path.is_file():
        return
    names, keep_names = _t1_names(path)
    others = sorted(names.rules_named() - {rule})
    if others:
        raise UsageError(
            f"{path} holds T1 passes of rule {', '.join(others)}, and the battery's T1 rule is {rule}: "
            f"--resume would mix the two. To go on with this file, name the old rule in the manifest "
            f"(t1: {{rule: {others[0]}}}); or grade into a new results file (--out NEW.jsonl) "
            "without --resume"
        )
    if keep:
        keep_names()


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
    if not out.is_file():
        return
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

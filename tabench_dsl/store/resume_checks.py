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
a string are escaped), so counting them is exact and runs at the speed of reading the file.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import msgspec

from ..core.display import shown
from ..core.errors import UsageError
from ..core.jsonl import BadLine, decode_line

_T1_TIER = re.compile(rb'"tier"\s*:\s*"t1"')
_T1_RULE = re.compile(rb'"t1_rule"\s*:\s*"([^"\\]*)"')
#: Bytes read at a time, cut after their last line break (a record is one line).
_BLOCK = 1 << 22


def recorded_t1_rules(path: Path) -> set[str]:
    """The T1 rules the T1 records of the results file at `path` name (`v1` for one naming none)."""
    tiers = named = 0
    rules: set[str] = set()
    with path.open("rb") as f:
        rest = b""
        while True:
            block = f.read(_BLOCK)
            data = rest + block
            end = data.rfind(b"\n") + 1 if block else len(data)
            lines, rest = data[:end], data[end:]
            tiers += len(_T1_TIER.findall(lines))
            for match in _T1_RULE.finditer(lines):
                named += 1
                rules.add(match[1].decode("utf-8", "replace"))
            if not block:
                break
    if tiers > named:
        rules.add("v1")
    return rules


def check_t1_rule(out: str | Path, rule: str, *, enabled: bool = True) -> None:
    """Refuse (`UsageError`, exit 2) to resume `out` under T1 rule `rule` when its T1 records name
    another rule. Nothing to check when T1 is off or the file is missing."""
    path = Path(out)
    if not enabled or not path.is_file():
        return
    others = sorted(recorded_t1_rules(path) - {rule})
    if others:
        raise UsageError(
            f"{path} holds T1 passes of rule {', '.join(others)}, and the battery's T1 rule is {rule}: "
            f"--resume would mix the two. To go on with this file, name the old rule in the manifest "
            f"(t1: {{rule: {others[0]}}}); or grade into a new results file (--out NEW.jsonl) "
            "without --resume"
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

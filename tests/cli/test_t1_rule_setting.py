"""The battery's T1 rule (`t1: {rule: v1 | v2}`): the manifest setting and its errors, the rule each
T1 record names, and `grade --resume` refusing a results file another rule passed answers in."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.helpers_grading import write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.errors import SpecErrors
from tabench_dsl.language.battery import load_battery
from tabench_dsl.store.results import iter_records


async def run(argv: list[str]) -> int:
    return await asyncio.to_thread(main, argv)


def set_t1(battery: Path, value: str | None) -> None:
    """Write the manifest's `t1:` line (None: leave the key out, the default rule)."""
    manifest = battery / "battery.yaml"
    lines = [line for line in manifest.read_text(encoding="utf-8").splitlines() if not line.startswith("t1:")]
    if value is not None:
        lines.append(f"t1: {value}")
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("value", "on", "rule"),
    [
        (None, True, "v2"),
        ("true", True, "v2"),
        ("false", False, "v2"),
        ("{rule: v1}", True, "v1"),
        ("{rule: v2}", True, "v2"),
    ],
)
def test_the_setting(work: Path, value: str | None, on: bool, rule: str) -> None:
    battery = write_battery(work)
    set_t1(battery, value)
    loaded = load_battery(battery)
    assert (loaded.t1, loaded.t1_rule) == (on, rule)


@pytest.mark.parametrize(
    ("value", "col", "message"),
    [
        ("{rule: v3}", 12, "t1 rule must be one of v1, v2, not 'v3'"),
        ("{rule: 2}", 12, "t1 rule must be one of v1, v2, not '2'"),
        ("{rules: v1}", 6, "t1 has one key, rule, not 'rules'"),
        ("{}", 5, "t1 names no rule: write t1: {rule: v2}"),
        ("sometimes", 5, "t1 must be true, false or {rule: v1 | v2}, not 'sometimes'"),
    ],
)
def test_a_bad_setting_is_named_at_its_line_and_column(
    work: Path, value: str, col: int, message: str
) -> None:
    battery = write_battery(work)
    set_t1(battery, value)
    with pytest.raises(SpecErrors) as caught:
        load_battery(battery)
    (error,) = caught.value.errors
    assert (Path(error.path).name, error.line, error.col, error.message) == ("battery.yaml", 5, col, message)


def test_a_bad_setting_exits_2_without_a_traceback(work: Path, capsys) -> None:
    battery = write_battery(work)
    set_t1(battery, "{rule: v9}")
    assert main(["compile", str(battery)]) == 2
    err = capsys.readouterr().err
    assert "battery.yaml:5:12" in err and "t1 rule must be one of v1, v2" in err and "Traceback" not in err


def answers(work: Path) -> Path:
    path = work / "answers.jsonl"
    rows = [{"system": "a", "question": "h02", "answer": "It listens on 7311."}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


async def test_each_t1_record_names_its_rule_and_resume_refuses_another(work: Path, capsys) -> None:
    battery = write_battery(work)
    set_t1(battery, "{rule: v1}")
    argv = ["grade", str(battery), "--answers", str(answers(work)), "--judge", "builtin"]
    assert await run(argv) == 0
    (record,) = iter_records(work / "results.jsonl")
    assert (record.tier, record.t1_rule) == ("t1", "v1")
    capsys.readouterr()

    set_t1(battery, None)  # now the default, v2
    assert await run([*argv, "--resume"]) == 2
    err = capsys.readouterr().err
    assert "T1 passes of rule v1" in err and "the battery's T1 rule is v2" in err
    assert "t1: {rule: v1}" in err and "--out NEW.jsonl" in err and "Traceback" not in err
    assert len(list(iter_records(work / "results.jsonl"))) == 1  # nothing written

    set_t1(battery, "{rule: v1}")  # the first way on: name the old rule
    assert await run([*argv, "--resume"]) == 0
    set_t1(battery, None)  # the second: a new results file
    assert await run([*argv, "--out", "new.jsonl"]) == 0
    (record,) = iter_records(work / "new.jsonl")
    assert (record.tier, record.t1_rule) == ("t1", "v2")


async def test_a_t1_record_naming_no_rule_was_graded_by_v1(work: Path, capsys) -> None:
    battery = write_battery(work)
    set_t1(battery, "{rule: v1}")
    argv = ["grade", str(battery), "--answers", str(answers(work)), "--judge", "builtin"]
    assert await run(argv) == 0
    # A results file written before T1 rules had names: its T1 record names none.
    results = work / "results.jsonl"
    line = json.loads(results.read_text(encoding="utf-8"))
    del line["t1_rule"]
    results.write_text(json.dumps(line) + "\n", encoding="utf-8")
    (old,) = iter_records(results)
    assert old.tier == "t1"  # still read
    set_t1(battery, None)
    assert await run([*argv, "--resume"]) == 2
    assert "T1 passes of rule v1" in capsys.readouterr().err
    set_t1(battery, "false")  # T1 off: no T1 pass to mix with
    assert await run([*argv, "--resume"]) == 0

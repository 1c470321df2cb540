"""Tables that fit: `tabench totals` at 80, 100 and 120 columns (`COLUMNS`) never cuts the system,
the score or the interval; the other columns go in the stated order (`SYSTEM_DROP_ORDER`), and a
note says which and how to see them. The table is read as printed, through `main(argv)`."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from support.make_results import make_record, write_results

from tabench_dsl.cli import main
from tabench_dsl.review.totals_tables import SYSTEM_DROP_ORDER

LONG = "org/very-long-model-name-v2.5-instruct"
ALL_COLUMNS = ["system", "answers", "pass", "fail", "adjud.", "error", "score", "95% CI", "T1", "calls"]
ALL_COLUMNS += ["stern", "tokens in", "cached", "out", "cost"]


def results(tmp_path: Path, systems: tuple[str, ...] = ("agent-a", "agent-b", LONG)) -> Path:
    records = []
    for system in systems:
        for i, outcome in enumerate(["pass", "pass", "fail", "t1", "adjudicate", "error", "pass", "pass"]):
            records.append(make_record(system, f"q{i}", outcome))
    return write_results(tmp_path / "results.jsonl", records)


def system_table(out: str) -> list[str]:
    return out[out.index("Totals per system") : out.index("Per question")].splitlines()


def header(lines: list[str]) -> list[str]:
    row = next(line for line in lines if line.startswith("┃"))
    return [cell.strip() for cell in row.strip("┃").split("┃")]


@pytest.mark.parametrize("width", [80, 100, 120])
def test_system_score_and_interval_are_whole_at_every_width(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    path = results(tmp_path)
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["totals", str(path)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= width
    lines = system_table(out)
    shown = header(lines)
    dropped = [name for name in SYSTEM_DROP_ORDER if name not in shown]
    # What goes, goes in the stated order, and the kept columns are all there, in their order.
    assert dropped == list(SYSTEM_DROP_ORDER[: len(dropped)])
    assert shown == [name for name in ALL_COLUMNS if name not in dropped]
    assert {"system", "score", "95% CI"} <= set(shown) and dropped
    assert "…" not in "".join(lines) + out[out.index("Per question") : out.index("Facets observed")]
    text = " ".join(out.split())
    note = f"not shown at {width} columns: {', '.join(dropped)}; --json has every column, or widen the "
    assert note + "terminal (COLUMNS=160)" in text
    # Every score and interval whole on its row; the long name folds, every piece of it is there.
    body = [line for line in lines if line.startswith("│")]
    for cell in ("71.4% (1 left out)", "35.9%-91.8%"):
        assert sum(cell in line for line in body) == 3
    names = "".join(line.split("│")[1].strip() for line in body)
    assert LONG in names and "agent-a" in names


def test_a_wide_terminal_shows_every_column_and_no_note(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["totals", str(results(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert header(system_table(out)) == ALL_COLUMNS
    assert "not shown at" not in out


def test_a_pipe_without_columns_gets_the_wide_table(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["totals", str(results(tmp_path, ("agent-a", "a" * 12)))]) == 0
    assert header(system_table(capsys.readouterr().out)) == ALL_COLUMNS


def test_injection_suspects_are_named_under_the_table(tmp_path: Path, capsys, monkeypatch) -> None:
    flagged = msgspec.structs.replace(make_record("agent-b\x1b[2J", "q1", "pass"), injection_suspect=True)
    path = write_results(tmp_path / "results.jsonl", [make_record("agent-a", "q1", "pass"), flagged])
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["totals", str(path)]) == 0
    text = " ".join(capsys.readouterr().out.split())
    line = "injection_suspect: 1 answer(s) read as instructions to the judge (agent-b\\x1b[2J 1); read"
    assert line in text
    assert "\x1b" not in text


def test_the_tag_table_says_what_its_scores_leave_out(tmp_path: Path, capsys, monkeypatch) -> None:
    records = [
        msgspec.structs.replace(make_record("a", f"q{i}", outcome), tags=["ops"])
        for i, outcome in enumerate(["pass", "error"])
    ]
    monkeypatch.setenv("COLUMNS", "120")
    assert main(["totals", str(write_results(tmp_path / "results.jsonl", records))]) == 0
    out = capsys.readouterr().out
    tags = out[out.index("Per tag") :].splitlines()
    assert any(line.startswith("│ ops") and "100.0% (1 left out)" in line for line in tags)


def compared(tmp_path: Path) -> tuple[Path, list[str]]:
    """Three long-named systems on ten tagged questions: the first passes all, the second none,
    the third half, so the first two differ significantly."""
    systems = [f"{LONG}-{kind}" for kind in ("all", "none", "half")]
    records = []
    for i in range(10):
        tags = ["easy"] if i < 5 else ["ops:network"]
        for system, passed in zip(systems, (True, False, i % 2 == 0), strict=True):
            record = make_record(system, f"q{i}", "pass" if passed else "fail")
            records.append(msgspec.structs.replace(record, tags=tags))
    return write_results(tmp_path / "results.jsonl", records), systems


def section(out: str, title: str, end: str | None = None) -> list[str]:
    start = out.index(title)
    return out[start : out.index(end, start) if end else len(out)].splitlines()


def key_of(lines: list[str]) -> dict[str, str]:
    """The `S1 = name` key under a table: label -> name."""
    pairs = (" ".join(line.split()).split(" = ", 1) for line in lines if " = " in line)
    return {label: name for label, name in pairs if label.startswith("S") and label[1:].isdigit()}


@pytest.mark.parametrize("width", [80, 100])
def test_pairs_and_tags_at_a_narrow_width_label_the_systems_with_a_key(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, width: int
) -> None:
    path, (all_, none, half) = compared(tmp_path)
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["totals", str(path)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= width
    pairs = section(out, "Systems compared pairwise")
    key = key_of(pairs)
    assert sorted(key) == ["S1", "S2", "S3"] and sorted(key.values()) == sorted([all_, none, half])
    # Every row told apart by whole short labels, with the significance mark: only all/none differ.
    rows = [[cell.strip() for cell in line.strip("│").split("│")] for line in pairs if line.startswith("│")]
    marks = {frozenset((key[row[0]], key[row[1]])): row[-1] for row in rows}
    assert marks == {frozenset((all_, none)): "*", frozenset((all_, half)): "", frozenset((none, half)): ""}
    assert "…" not in "\n".join(pairs)
    tags = section(out, "Per tag", "Systems compared pairwise")
    tag_key = key_of(tags)
    labels = header(tags)[-3:]
    assert sorted(labels) == ["S1", "S2", "S3"] and tag_key == key  # the same labels in both tables
    scores = {
        line.split("│")[1].strip(): dict(
            zip(
                (tag_key[label] for label in labels), (c.strip() for c in line.split("│")[-4:-1]), strict=True
            )
        )
        for line in tags
        if line.startswith("│")
    }
    assert scores == {
        "easy": {all_: "100.0%", none: "0.0%", half: "60.0%"},
        "ops:network": {all_: "100.0%", none: "0.0%", half: "40.0%"},
    }


def test_pairs_and_tags_on_a_wide_terminal_name_the_systems(tmp_path: Path, capsys, monkeypatch) -> None:
    path, systems = compared(tmp_path)
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["totals", str(path)]) == 0
    out = capsys.readouterr().out
    pairs = section(out, "Systems compared pairwise")
    assert any(systems[0] in line and systems[1] in line and "*" in line for line in pairs)
    assert not key_of(out.splitlines()) and sorted(
        header(section(out, "Per tag", "Systems compared"))[-3:]
    ) == sorted(systems)

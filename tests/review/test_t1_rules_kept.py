"""What `grade --resume`'s T1 rule check found in a results file (`store.resume_checks`), kept in
the file's index: a later check scans only the lines appended since, and finds what a scan of the
whole file finds, whatever was appended, torn, rewritten or deleted in between."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.core.errors import UsageError
from tabench_dsl.store.results_index import index_path
from tabench_dsl.store.resume_checks import (
    T1_TIER_OR_RULE,
    ScanAhead,
    check_t1_rule,
    recorded_gradings,
    recorded_t1_rules,
)


@pytest.fixture(autouse=True)
def _own_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the index's signing key


def line(question: str, tier: str, rule: str | None) -> str:
    fields = {"system": "a", "question": question, "tier": tier, "verdict": "pass"}
    if rule is not None:
        fields["t1_rule"] = rule
    return json.dumps(fields) + "\n"


def test_a_rule_name_from_the_file_is_shown_not_sent_to_the_terminal(tmp_path: Path) -> None:
    # A resume's first read decodes the names its records give (`GradingsTally`), escapes and all.
    with pytest.raises(UsageError) as refused:
        check_t1_rule(tmp_path / "r.jsonl", "v2", {"v9\x1b[2J"})
    assert "\x1b" not in str(refused.value) and "v9" in str(refused.value)


def test_a_kept_scan_is_extended_by_the_lines_appended(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text(line("q1", "t1", "v2") + line("q2", "t2", None))
    assert recorded_t1_rules(results) == {"v2"}
    assert index_path(results).is_file()  # kept
    assert recorded_t1_rules(results) == {"v2"}  # read back
    with results.open("a") as f:
        f.write(line("q3", "t1", None))  # a T1 record naming no rule: v1's
    assert recorded_t1_rules(results) == {"v1", "v2"}
    with results.open("a") as f:
        f.write(line("q4", "t1", "v3").rstrip("\n"))  # torn: counted, never kept
    assert recorded_t1_rules(results) == {"v1", "v2", "v3"}
    with results.open("a") as f:
        f.write("\n" + line("q5", "t2", None))
    assert recorded_t1_rules(results) == {"v1", "v2", "v3"}


def test_a_rewritten_file_is_scanned_whole(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text(line("q1", "t1", "v2") + line("q2", "t1", None))
    assert recorded_t1_rules(results) == {"v1", "v2"}
    results.write_text(line("q1", "t1", "v2") + line("q2", "t1", "v2"))  # same size, other bytes
    assert recorded_t1_rules(results) == {"v2"}
    index_path(results).unlink()
    assert recorded_t1_rules(results, keep=False) == {"v2"}
    assert not index_path(results).exists()  # a dry run writes nothing


def test_a_refusal_writes_nothing(tmp_path: Path) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text(line("q1", "t1", "v1"))
    with pytest.raises(UsageError, match="T1 passes of rule v1"):
        check_t1_rule(results, "v2", recorded_t1_rules(results, keep=False))
    assert not index_path(results).exists()
    check_t1_rule(results, "v1", recorded_t1_rules(results))
    assert index_path(results).is_file()


def test_a_scan_over_ranges_read_side_by_side_finds_what_one_read_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forced to three processes, each a third of the file's bytes: T1 records naming no rule in
    the first third only, a rule and a scorer in the last only, counted and named as one read does."""
    results = tmp_path / "r.jsonl"
    lines = [line(f"q{n}", "t1", None) for n in range(20)] + [
        line(f"q{n}", "t2", None) for n in range(20, 40)
    ]
    scored = json.dumps({"system": "a", "question": "q99", "tier": "t1", "t1_rule": "v2", "scorer": "s-2"})
    results.write_text("".join(lines) + scored + "\n")
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "3")
    split = recorded_gradings(results, keep=False)
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "1")
    assert split == recorded_gradings(results, keep=False)
    assert split.t1_rules == {"v1", "v2"} and split.scorers == {"s-2"}


#: The two searches the scan made before it made one (`T1_TIER_OR_RULE`), as the reference.
_TIER_BEFORE = re.compile(rb'"tier"\s*:\s*"t1"')
_RULE_BEFORE = re.compile(rb'"t1_rule"\s*:\s*"([^"\\]*)"')
_PIECES = [
    b'"tier"',
    b'"t1_rule"',
    b'"t1"',
    b'"t2"',
    b":",
    b" ",
    b'"v2"',
    b'"v\\"1"',
    b'"',
    b"\\",
    b"t1",
    b"_rule",
    b",",
]


@settings(derandomize=True, max_examples=300)
@given(st.lists(st.sampled_from(_PIECES), max_size=30))
def test_one_search_finds_what_the_two_found(pieces: list[bytes]) -> None:
    """Any run of the pieces a tier or a rule is written with: the T1 tiers counted, and the rules
    named, as the two searches counted and named them."""
    text = b"".join(pieces)
    tiers, named = 0, []
    for tier, rule in T1_TIER_OR_RULE.findall(text):
        if tier:
            tiers += 1
        else:
            named.append(rule)
    assert tiers == len(_TIER_BEFORE.findall(text))
    assert named == _RULE_BEFORE.findall(text)


@pytest.mark.parametrize("rule", ["v2", "v3"])
def test_a_scan_begun_before_the_battery_finds_and_refuses_as_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rule: str
) -> None:
    """`grade --resume` begins its scan before it compiles the battery (`ScanAhead`), shared with
    a forked child: it finds what one read finds, refuses as it refuses, and a refusal keeps
    nothing; a file changed since the scan began is scanned again."""
    results = tmp_path / "r.jsonl"
    lines = [line(f"q{n}", "t1", "v2" if n % 3 else None) for n in range(300)]
    results.write_text("".join(lines))
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")
    ahead = ScanAhead(results)
    assert ahead.ahead is not None and ahead.ahead.forked  # begun in a child
    if rule == "v3":
        with pytest.raises(UsageError, match="T1 passes of rule v1, v2"):
            check_t1_rule(results, rule, recorded_t1_rules(results, keep=False, ahead=ahead))
        assert not index_path(results).exists()
        return
    found = recorded_gradings(results, ahead=ahead)
    assert index_path(results).is_file()  # kept
    index_path(results).unlink()
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "1")
    assert found == recorded_gradings(results, keep=False)
    assert found.t1_rules == {"v1", "v2"}
    recorded_gradings(results)
    with results.open("a") as f:
        f.write(line("q-new", "t1", "v9"))
    monkeypatch.setenv("TABENCH_READ_PROCESSES", "2")
    stale = ScanAhead(tmp_path / "r.jsonl")
    with results.open("a") as f:  # written to after the scan began: not the file it scanned
        f.write(line("q-newer", "t1", "v8"))
    assert recorded_t1_rules(results, ahead=stale) == {"v1", "v2", "v8", "v9"}


def test_a_line_longer_than_a_block_is_scanned_whole(tmp_path: Path) -> None:
    # The scan reads blocks of 4 MiB cut at their last line break; a line of 9 MiB holds none.
    results = tmp_path / "r.jsonl"
    long = json.dumps(
        {"system": "a", "question": "q2", "answer": "x" * (9 << 20), "tier": "t1", "t1_rule": "v9"}
    )
    results.write_text(line("q1", "t1", "v2") + long + "\n" + line("q3", "t2", None) + line("q4", "t1", None))
    assert recorded_gradings(results, keep=False).t1_rules == {"v1", "v2", "v9"}

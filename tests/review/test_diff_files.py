"""`diff A B` streamed from the files (`review.diff_files`) gives exactly the diff of the standing
records read whole (`viewer.run.load_run` + `diff.diff_records`), warnings included."""

from __future__ import annotations

import msgspec
import pytest
from support.make_results import decision_on as decide
from support.make_results import make_record, many_results, write_results

from tabench_dsl.core.errors import UsageError
from tabench_dsl.core.records import JudgeInfo, record_encoder
from tabench_dsl.review.audit import answer_sha256
from tabench_dsl.review.diff import diff_json, diff_records
from tabench_dsl.review.diff_files import diff_files
from tabench_dsl.review.viewer.run import load_run
from tabench_dsl.store.decisions import decisions_path

NEW = JudgeInfo(backend="anthropic", model="new-judge")
OTHER_ENDPOINT = JudgeInfo(backend="anthropic", model="new-judge", endpoint="http://other")
BUILTIN = JudgeInfo(backend="builtin", model="lexical", language_model=False, label="not an LLM")


def write_decisions(results, decisions) -> None:
    decisions_path(results).write_bytes(b"".join(record_encoder.encode(d) + b"\n" for d in decisions))


def whole(a, b):
    """The diff and the warnings as the whole read gives them."""
    first, second = load_run(a), load_run(b)
    diff = diff_records(first.records, second.records, a_name=str(a), b_name=str(b))
    return diff_json(diff), [(run.problems, run.stale) for run in (first, second)]


def streamed(a, b):
    diff, first, second = diff_files(a, b)
    return diff_json(diff), [(side.problems, side.stale) for side in (first, second)]


@pytest.fixture
def gradings(tmp_path):
    """A and B over four systems: flips, re-graded pairs, one-sided pairs, several judges, decisions
    applied, stale and replaced, audits, a decision written on a record's line, bad lines."""
    base = many_results(400, systems=4, seed=3)
    replace = msgspec.structs.replace
    flip = {"pass": "fail", "fail": "pass", "adjudicate": "pass", "error": "fail"}
    a_records = [*base[:380], make_record("zz", "q-only-a", "pass"), make_record("aa", "q00001", "fail")]
    b_records = []
    for i, record in enumerate(base[20:]):
        if i % 7 == 0:
            record = replace(record, verdict=flip[record.verdict], reason=f"B flipped {i}", judge=NEW)
        elif i % 11 == 0:
            record = replace(record, judge=OTHER_ENDPOINT if i % 2 else BUILTIN)
        elif i % 13 == 0:
            record = replace(record, cause="missing", judge=NEW)
        b_records.append(record)
    b_records += [replace(base[30], verdict="error", reason="re-graded, then failed")]  # the last stands
    b_records += [replace(base[31], decision=decide(base[31], "fail", note="on the line"))]
    a_path, b_path = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_results(a_path, a_records)
    write_results(b_path, b_records)
    with open(b_path, "ab") as f:
        f.write(b'{"system": "s"}\n{not json\n')
    adjudicated = [r for r in base[20:380] if r.verdict == "adjudicate"]
    judged = [r for r in base if r.verdict in ("pass", "fail") and r.tier == "t2"]
    write_decisions(
        a_path,
        [
            decide(adjudicated[0], "pass", note="fine"),
            decide(adjudicated[1], "fail"),
            decide(adjudicated[1], "pass", note="changed my mind"),  # replaces the one above
            replace(decide(adjudicated[2], "pass"), prompt_sha256="other"),  # stale: prompt changed
            decide(make_record("nobody", "q", "adjudicate"), "pass"),  # stale: no such record
            decide(judged[0], "fail", kind="audit", answer_sha256=answer_sha256(judged[0])),
            decide(judged[1], "fail", kind="audit", answer_sha256="not the answer's"),  # stale
        ],
    )
    write_decisions(b_path, [decide(r, "fail") for r in adjudicated[3:8]] + [decide(base[30], "pass")])
    return a_path, b_path


@pytest.mark.parametrize("processes", ["1", "2"])
def test_streamed_diff_is_the_whole_read_one(gradings, monkeypatch, processes: str) -> None:
    """Each side read in this process, or side by side in two (B's names numbered again as A's)."""
    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    a, b = gradings
    expected = whole(a, b)
    assert streamed(a, b) == expected
    data = msgspec.json.decode(expected[0])
    # The fixture reaches what it means to: flips, both kinds of one-sided pairs, several judges,
    # decided reasons, stale decisions and bad lines.
    assert len(data["flips"]) > 40 and data["only_in_a"] and data["only_in_b"]
    assert len(data["b_judges"]) == 3  # a judge at another endpoint has the same name
    assert any(f["reason_b"].startswith("decided fail by ann") for f in data["flips"])
    assert any(f["reason_a"] == "decided pass by ann: changed my mind" for f in data["flips"])
    assert [len(problems) for problems, _ in expected[1]] == [0, 2]
    assert len(expected[1][0][1]) == 4  # replaced, prompt changed, no such record, answer changed


@pytest.mark.parametrize("processes", ["1", "2"])
def test_same_file_on_both_sides(gradings, monkeypatch, processes: str) -> None:
    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    a, _ = gradings
    assert streamed(a, a) == whole(a, a)


def test_errors_are_the_whole_read_ones(tmp_path, gradings) -> None:
    a, b = gradings
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"{not json\n")
    for other in (bad, tmp_path / "missing.jsonl"):
        with pytest.raises(UsageError) as expected:
            load_run(other)
        with pytest.raises(UsageError) as got:
            diff_files(a, other)
        assert str(got.value) == str(expected.value)
    decisions_path(b).write_bytes(b"{torn\n")
    with pytest.raises(UsageError) as got:
        diff_files(a, b)
    assert "b.decisions.jsonl:1:" in str(got.value) and "bad decision" in str(got.value)


def test_a_file_rewritten_between_the_reads_is_an_error_not_a_traceback(tmp_path, gradings) -> None:
    """The flips' reasons are read in a second pass; a file rewritten in between (not appended to)
    no longer holds the flipped pairs: the diff says so instead of raising a KeyError."""
    from tabench_dsl.review.diff_files import Names, read_side

    a, b = gradings
    names = Names()
    left, right = read_side(a, names), read_side(b, names)
    flipped = {  # pairs in both whose outcome codes (the two low bits) differ
        s << 32 | q
        for s in left.codes.systems() & right.codes.systems()
        for q in left.codes.questions_of(s)
        if right.codes.get(s, q) >= 0 and left.codes.get(s, q) & 3 != right.codes.get(s, q) & 3
    }
    assert flipped
    write_results(a, [make_record("someone-else", "q-new", "pass")] * 50)
    with pytest.raises(UsageError, match=r"a\.jsonl changed while diff read it"):
        left.reasons(flipped, names)


def test_records_of_stop_where_the_caller_measured(tmp_path) -> None:
    """Lines appended after a reader measured the file are not read as the file it measured."""
    from tabench_dsl.store.light_records import iter_records_of

    path = tmp_path / "r.jsonl"
    first, later = make_record("s", "q1", "pass"), make_record("s", "q1", "fail")
    write_results(path, [first])
    size = path.stat().st_size
    with open(path, "ab") as f:
        f.write(record_encoder.encode(later) + b"\n")
    assert [r.verdict for r in iter_records_of(path, {("s", "q1")}, stop=size)] == ["pass"]
    assert [r.verdict for r in iter_records_of(path, {("s", "q1")})] == ["pass", "fail"]


@pytest.mark.parametrize("processes", ["1", "3"])
def test_records_of_read_over_ranges_are_one_read_s(tmp_path, monkeypatch, processes: str) -> None:
    """The records of some pairs, read in one process or over three ranges of lines: the same, in
    file order, a line that is no whole record given as its pair, a line cut short by `stop` left."""
    from tabench_dsl.store.light_records import iter_records_of

    monkeypatch.setenv("TABENCH_READ_PROCESSES", processes)
    records = many_results(60, systems=3, seed=5)
    path = write_results(tmp_path / "r.jsonl", records)
    broken = b'{"system": "%s", "question": "%s", "tier": 7}\n' % (
        records[40].system.encode(),
        records[40].question.encode(),
    )
    with open(path, "ab") as f:
        f.write(b"\n{not json\n" + broken + record_encoder.encode(records[2])[:-3])
    wanted = {r.key for r in records[::7]} | {records[40].key}
    expected = [*(r for r in records if r.key in wanted), records[40].key]
    assert list(iter_records_of(path, wanted)) == expected
    assert list(iter_records_of(path, wanted, stop=path.stat().st_size - 5)) == expected


def test_judges_are_named_in_the_order_of_the_first_pair_each_judged(tmp_path) -> None:
    """The file meets the judges in one order, the pairs sorted by name in the other: the diff
    names them as the sorted pairs meet them, as the whole read does."""
    replace = msgspec.structs.replace
    first_met = replace(make_record("sys-b", "q1", "pass"), judge=NEW)
    first_sorted = replace(make_record("sys-a", "q1", "fail"), judge=BUILTIN)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_results(a, [first_met, first_sorted])
    write_results(b, [first_met, first_sorted, replace(make_record("sys-a", "q0", "pass"), judge=NEW)])
    expected = whole(a, b)
    assert streamed(a, b) == expected
    data = msgspec.json.decode(expected[0])
    assert data["a_judges"] == [BUILTIN.describe(), NEW.describe()]
    assert data["b_judges"] == [NEW.describe(), BUILTIN.describe()]

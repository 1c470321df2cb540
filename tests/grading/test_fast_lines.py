"""`fast_lines.decoded_lines` reads a results file exactly as `jsonl.numbered_lines` and
`jsonl.decode_line` read it line by line: the same records, the same bad lines at the same line and
column, a BOM dropped, blank lines skipped, a torn last line reported, lines across block edges."""

from __future__ import annotations

from pathlib import Path

from support.make_results import make_record, many_results, write_results

from tabench_dsl.core.jsonl import BOM, BadLine, decode_line, numbered_lines
from tabench_dsl.core.records import record_decoder, record_encoder
from tabench_dsl.store.fast_lines import BATCH, BLOCK, SPAN, decoded_blocks_at, lines_starting_at
from tabench_dsl.store.light_records import iter_light_records
from tabench_dsl.store.results import iter_records


def line_by_line(path: Path) -> tuple[list, list[str]]:
    """The reading as it was before `decoded_lines`: one line at a time, every check first."""
    records, problems = [], []
    with open(path, "rb") as f:
        for number, line in numbered_lines(f):
            try:
                records.append(decode_line(record_decoder, line))
            except BadLine as bad:
                where = f"{number}" if bad.col is None else f"{number}:{bad.col}"
                problems.append(f"{path}:{where}: not a result record: {bad.message}")
    return records, problems


def read(path: Path) -> tuple[list, list[str]]:
    problems: list[str] = []
    return list(iter_records(path, on_problem=problems.append)), problems


def test_hostile_lines_are_read_as_line_by_line(tmp_path: Path) -> None:
    good = record_encoder.encode(make_record("a", "q1", "pass"))
    lines = [
        good,
        b"",
        b"   \t",
        BOM,
        BOM + record_encoder.encode(make_record("a", "q2", "fail")),
        b'{"system": "a", "question": "q3"}',
        b'{"system": "\xff"}',
        b'{"system": "\\ud800"}',
        b"[" * 5000,
        b"not json",
        record_encoder.encode(make_record("b", "q1", "error")),
        good[:-7],  # torn: no final line break either
    ]
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(lines))
    records, problems = read(path)
    expected_records, expected_problems = line_by_line(path)
    assert records == expected_records and len(records) == 3
    assert problems == expected_problems and len(problems) == 6
    assert problems[0].startswith(f"{path}:6: ") and problems[-1].startswith(f"{path}:12")
    assert any(p.startswith(f"{path}:7:13: ") for p in problems), problems  # the bad byte's column


def by_blocks(path: Path) -> tuple[list, list[str]]:
    """The records and problems `decoded_blocks_at` reads, each record checked against the line
    its offset names (the line that starts there holds it)."""
    problems: list[str] = []
    records = []
    data = path.read_bytes()

    def on_bad(number: int, bad: BadLine) -> None:
        where = f"{number}" if bad.col is None else f"{number}:{bad.col}"
        problems.append(f"{path}:{where}: not a result record: {bad.message}")

    for offsets, values in decoded_blocks_at(path, record_decoder, on_bad, stop=len(data)):
        assert len(offsets) == len(values) <= BATCH
        for at, value in zip(offsets, values, strict=True):
            assert at == 0 or data[at - 1 : at] == b"\n"
            line = data[at:].split(b"\n", 1)[0]
            assert decode_line(record_decoder, line) == value
            records.append(value)
    return records, problems


def test_blocks_read_what_lines_read_hostile_lines_and_all(tmp_path: Path) -> None:
    """A batch whose lines all decode is decoded in one call, one with a bad line line by line:
    the same records and the same problems at the same line numbers either way."""
    good = [record_encoder.encode(r) for r in many_results(3 * BATCH, systems=3)]
    hostile = [b"", BOM + good[0], b"not json", b'{"system": "\xff"}', b"   ", good[1][:-9]]
    lines = [*good[:BATCH], *good[BATCH : 2 * BATCH - 4], *hostile[:4], *good[2 * BATCH :], *hostile[4:]]
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(lines))
    assert by_blocks(path) == line_by_line(path)
    assert len(by_blocks(path)[0]) == 2 * BATCH + 1 - 4 + BATCH and len(by_blocks(path)[1]) == 3


def test_lines_across_block_edges_are_whole(tmp_path: Path) -> None:
    path = write_results(tmp_path / "big.jsonl", many_results(2 * BLOCK // 600 + 50, systems=3))
    assert path.stat().st_size > 2 * BLOCK  # at least two block edges fall inside lines
    records, problems = read(path)
    assert problems == [] and records == line_by_line(path)[0]
    assert by_blocks(path) == (records, [])
    light = list(iter_light_records(path))
    assert [(r.system, r.question, r.verdict) for r in light] == [
        (r.system, r.question, r.verdict) for r in records
    ]


def test_a_file_ending_without_a_line_break_keeps_its_last_whole_record(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_bytes(record_encoder.encode(make_record("a", "q1", "t1")))
    assert read(path) == line_by_line(path) and len(read(path)[0]) == 1
    path.write_bytes(b"")
    assert read(path) == ([], [])


def test_lines_picked_by_their_offsets_are_the_lines_there(tmp_path: Path) -> None:
    """Lines close together (one read serves several), far apart, longer than a read, and the last
    one without a line break; an offset past the end gives no bytes (a file cut short since)."""
    lines = [b"x" * (n % 700) + b"%d" % n for n in range(3000)]
    lines[1500] = b"y" * (2 * SPAN + 5)
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"\n".join(lines))  # no final line break
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    picked = [*range(0, 40, 3), *range(41, 1499, 97), 1499, 1500, 1501, *range(1502, 3000, 250), 2999]
    got = list(lines_starting_at(path, [starts[n] for n in picked] + [path.stat().st_size + 10]))
    assert got == [lines[n] for n in picked] + [b""]

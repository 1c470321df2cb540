"""The command line against random and nearly valid files: every run ends with exit 0, 1 or 2 and
says why when it is not 0; nothing escapes `main` and no traceback is printed.

Hypothesis writes each kind of file a user may be handed by someone else (manifest, policy,
rubric, answers, results, decisions) as random bytes or as a valid file with a few mutations:
bytes inserted, deleted or replaced, byte order marks, control characters and bidi overrides,
nesting thousands deep, numbers hundreds of digits long, surrogate escapes and bytes that are not
UTF-8, a cut-off end, a doubled line. Each variant goes through every command that reads that kind
of file, in process (`tabench_dsl.cli.main`), the builtin judge grading, so no network is touched.

It cannot pass by luck: examples are derandomized (the same inputs on every run, so a pass is a
pass of those inputs, not of a lucky draw), the unmutated files are checked to pass first (a broken
harness cannot hide behind exit 2), and each kind must show both outcomes, some variants accepted
and some rejected, so the inputs are known to reach past the first check. The number of inputs tried
is printed at the end of the session.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.make_results import small_results, write_battery

from tabench_dsl.cli import main
from tabench_dsl.core.records import record_encoder
from tabench_dsl.review.decisions import make_decision

#: Examples per kind of file: 30 to 120 ms each, so the whole module stays around a minute.
EXAMPLES = 120

#: The battery's own files (the rest of the files live beside the battery folder).
SPEC_FILES = ("battery.yaml", "memos.policy", "memos.rubric")
ANSWERS = b"".join(
    msgspec.json.encode({"system": system, "question": question, "answer": answer}) + b"\n"
    for system, question, answer in [
        ("agent-a", "h01", "In SQLite, under the data folder"),
        ("agent-a", "h02", "Ingest, Index, Recall, Compact"),
        ("agent-b", "h03", "It merges old memories \u00e9t\u00e9 \U0001f600"),
        ("agent-b", "h04", "There is no Summarize stage"),
    ]
)


def _valid_files() -> dict[str, bytes]:
    """Every file a fuzzed run reads, valid: the battery's three, answers, results, decisions."""
    with tempfile.TemporaryDirectory() as folder:
        battery = write_battery(Path(folder))
        files = {name: (battery / name).read_bytes() for name in SPEC_FILES}
    records = small_results()
    adjudicated = [r for r in records if r.verdict == "adjudicate"]
    files["answers.jsonl"] = ANSWERS
    files["run.jsonl"] = b"".join(record_encoder.encode(r) + b"\n" for r in records)
    files["run.decisions.jsonl"] = b"".join(
        record_encoder.encode(make_decision(r, verdict, reviewer="ana", note="checked by hand")) + b"\n"
        for r, verdict in zip(adjudicated, ("pass", "fail"), strict=True)
    )
    return files


VALID = _valid_files()

#: The commands that read each kind of file. `{out}` is a results file of the run's own.
SPEC_COMMANDS = [
    ["lint", "{battery}"],
    ["compile", "{battery}"],
    ["grade", "{battery}", "--answers", "{answers}", "--out", "{out}", "--judge", "builtin", "--no-cache"],
]
COMMANDS: dict[str, list[list[str]]] = {
    "battery.yaml": SPEC_COMMANDS,
    "memos.policy": SPEC_COMMANDS,
    "memos.rubric": SPEC_COMMANDS,
    "answers.jsonl": [SPEC_COMMANDS[2]],
    "run.jsonl": [
        ["totals", "{results}"],
        ["totals", "{results}", "--json"],
        ["adjudicate", "{results}", "--reviewer", "fuzz"],
        [
            "grade",
            "{battery}",
            "--answers",
            "{answers}",
            "--out",
            "{results}",
            "--resume",
            "--judge",
            "builtin",
            "--no-cache",
            "--json",
        ],
    ],
    "run.decisions.jsonl": [
        ["totals", "{results}", "--json"],
        ["adjudicate", "{results}", "--reviewer", "fuzz"],
    ],
}

# -- the variants ----------------------------------------------------------------------------------

BOM = b"\xef\xbb\xbf"
#: Characters that change what a terminal shows or where a line ends.
CONTROLS = [
    b"\x00",
    b"\x1b[2J",
    b"\x1b]8;;http://x\x07",
    b"\r",
    b"\x0b",
    b"\x0c",
    b"\x7f",
    b"\t",
    "\u0085".encode(),
    "\u2028".encode(),
    "\u202e".encode(),
    "\u200f".encode(),
    b"[/x]",
    b"[link=x]",
]
#: Text that is not whole characters: escapes of half a surrogate pair, raw surrogates, bytes that
#: are not UTF-8, a sequence cut short.
BAD_TEXT = [
    b"\\ud800",
    b"\\udfff",
    b"\\ud800\\u0041",
    b"\xed\xa0\x80",
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xf4\x90\x80\x80",
    b"\xc0\xaf",
]
NUMBERS = [
    b"9" * 400,
    b"1e999999",
    b"-1e-999999",
    b"0x7fffffffffffffff",
    b"1" * 5000,
    b".inf",
    b"NaN",
    b"-0",
    b"99999999999999999999999999999999",
]
#: Whole string values a hostile file may hold: rich markup (a closing tag with no opening one is
#: an error to a markup parser), terminal escapes, bidi overrides, bad text, a very long value.
HOSTILE_VALUES = [
    b"[/x]",
    b"[/]",
    b"x[/bold]",
    b"[link=http://x]y[/link]",
    b"\\u001b[2J\\u001b]0;t\\u0007",
    "\u202etxt.exe".encode(),
    b"\\ud800",
    b"\xff\xfe",
    b"",
    b" ",
    b"a" * 70_000,
    b"\\u0000",
    b"{{ 7*7 }}",
    b"../../etc/passwd",
]
#: The mutations, the nearly valid ones (deep nesting, a hostile value) twice as likely as the rest.
MUTATIONS = [
    "insert",
    "delete",
    "replace",
    "bom",
    "control",
    "text",
    "number",
    "nesting",
    "nesting",
    "cut",
    "line",
    "value",
    "value",
]
#: What nests: brackets and braces, JSON and YAML mappings, YAML block lists, rubric blocks.
OPENERS = [b"[", b"{", b'{"a":', b"- ", b"{a: ", b"question q {\n", b"(", b'"']


def _nesting(draw: st.DrawFn, data: bytearray) -> tuple[int, bytes]:
    """Brackets or mappings nested deep, and where to put them: bare after a byte that opens a
    value, as a JSON member after `{` or `,`, or as a YAML key at a line start, so they land where
    a parser has to follow them rather than inside a string."""
    # 3,000 is past every recursion limit in play (Python's 1,000 bounds msgspec and PyYAML); deeper
    # only costs time. Openers that are whole lines stay at 600: each is a line a report names.
    depth = draw(st.sampled_from([30, 600, 3_000, 3_000]))
    form, openers, after = draw(
        st.sampled_from(
            [
                ("bare", OPENERS, b":[{,\n"),  # where a value starts
                ("member", [b"[", b'{"a":'], b"{,"),  # a JSON member
                ("key", [b"[", b"{", b"{a: ", b"- "], b"\n"),  # a YAML key
            ]
        )
    )
    opener = draw(st.sampled_from(openers))
    if opener.endswith(b"\n"):
        depth = min(depth, 600)
    closer = {b"[": b"]", b"{": b"}", b'{"a":': b"}", b"{a: ": b"}", b"(": b")"}.get(opener, b"")
    nested = opener * depth + (b"1" + closer * depth if draw(st.booleans()) else b"")
    text = {"bare": b" " + nested, "member": b' "deep": ' + nested + b", ", "key": b"deep: " + nested + b"\n"}
    places = [0] + [i + 1 for i, byte in enumerate(data) if byte in after]
    return draw(st.sampled_from(places)), text[form]


#: A double-quoted string, as JSON, YAML and rubric files write them.
_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')


def _in_string(data: bytearray) -> list[int]:
    """Offsets just after a double quote: inserted text lands inside a string about half the time,
    where escapes are decoded and text reaches prompts, names and the terminal."""
    return [0] + [i + 1 for i, byte in enumerate(data) if byte == ord('"')]


@st.composite
def variant(draw: st.DrawFn, valid: bytes) -> bytes:
    """Random bytes (one time in six), else `valid` with one to four mutations."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.binary(max_size=4096))
    data = bytearray(valid)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(MUTATIONS))
        if kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif kind == "replace" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif kind == "bom":
            data[0:0] = BOM if draw(st.booleans()) else b""
            data[at:at] = BOM
        elif kind == "control":
            at = draw(st.sampled_from(_in_string(data))) if draw(st.booleans()) else at
            data[at:at] = draw(st.sampled_from(CONTROLS))
        elif kind == "text":
            at = draw(st.sampled_from(_in_string(data))) if draw(st.booleans()) else at
            data[at:at] = draw(st.sampled_from(BAD_TEXT))
        elif kind == "number":
            data[at:at] = draw(st.sampled_from(NUMBERS))
        elif kind == "nesting":
            at, nested = _nesting(draw, data)
            data[at:at] = nested
        elif kind == "cut":
            del data[at:]
        elif kind == "value":
            strings = list(_STRING.finditer(data))
            if strings:
                found = strings[draw(st.integers(0, len(strings) - 1))]
                data[found.start() + 1 : found.end() - 1] = draw(st.sampled_from(HOSTILE_VALUES))
        elif kind == "line":
            lines = bytes(data).splitlines(keepends=True)
            if lines:
                i = draw(st.integers(0, len(lines) - 1))
                lines.insert(i, lines[i])
                data = bytearray(b"".join(lines))
    return bytes(data)


# -- running the CLI -------------------------------------------------------------------------------


class Run(msgspec.Struct):
    argv: list[str]
    status: int
    out: str
    err: str


def run_cli(argv: list[str], stdin: str = "p\n\nf\n\nq\n") -> Run:
    """`main(argv)` with its own stdin, stdout and stderr; any exception escaping it fails the test
    with its traceback (which Hypothesis then shrinks to a smallest input)."""
    out, err = io.TextIOWrapper(io.BytesIO(), "utf-8"), io.TextIOWrapper(io.BytesIO(), "utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _stdin(io.StringIO(stdin)):
            status = main(argv)
    except BaseException:  # any escape at all is the failure this test looks for
        raise AssertionError(f"tabench {' '.join(argv)} raised:\n{traceback.format_exc()}") from None
    return Run(argv, status, _text(out), _text(err))


@contextlib.contextmanager
def _stdin(stream: io.StringIO) -> Iterator[None]:
    saved, sys.stdin = sys.stdin, stream
    try:
        yield
    finally:
        sys.stdin = saved


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8", "replace")  # type: ignore[attr-defined]


def check(run: Run) -> None:
    """The promise: exit 0, 1 or 2; a message when not 0 (on stderr, or on stdout for `lint`, whose
    report is its output); never a traceback."""
    where = (
        f"tabench {' '.join(run.argv)} -> {run.status}\n--- stderr\n{run.err[:4000]}\n"
        f"--- stdout\n{run.out[:2000]}"
    )
    assert run.status in (0, 1, 2), where
    assert "Traceback (most recent call last)" not in run.err + run.out, where
    if run.status != 0:
        assert (run.err + run.out).strip(), where


def run_all(name: str, content: bytes) -> list[Run]:
    """Every command that reads `name`, with `content` in its place and the other files valid."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        battery = write_battery(root / "battery")
        for file, data in VALID.items():
            place = battery / file if file in SPEC_FILES else root / file
            place.write_bytes(content if file == name else data)
        names = {
            "battery": str(battery),
            "answers": str(root / "answers.jsonl"),
            "results": str(root / "run.jsonl"),
        }
        runs = []
        for number, template in enumerate(COMMANDS[name]):
            argv = [part.format(out=str(root / f"out{number}.jsonl"), **names) for part in template]
            runs.append(run_cli(argv))
            check(runs[-1])
        return runs


# -- the tests -------------------------------------------------------------------------------------


class _Tally:
    """Inputs tried per kind of file, printed once at the end of the session."""

    def __init__(self) -> None:
        self.tried: Counter[str] = Counter()

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.tried:
            parts = ", ".join(f"{name} {count}" for name, count in sorted(self.tried.items()))
            terminalreporter.write_line(
                f"fuzz: {sum(self.tried.values())} inputs tried through the CLI ({parts})"
            )


@pytest.fixture(scope="session")
def tally(pytestconfig: pytest.Config) -> _Tally:
    plugin = _Tally()
    pytestconfig.pluginmanager.register(plugin, "tabench-fuzz-tally")
    return plugin


@pytest.mark.parametrize("name", list(COMMANDS))
def test_valid_files_pass(name: str) -> None:
    """The harness itself: the unmutated files go through every command with exit 0."""
    for run in run_all(name, VALID[name]):
        assert run.status == 0, f"tabench {' '.join(run.argv)} -> {run.status}\n{run.err}"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_fuzzed_file(name: str, tally: _Tally) -> None:
    statuses: Counter[int] = Counter()

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(content=variant(VALID[name]))
    def fuzz(content: bytes) -> None:
        tally.tried[name] += 1
        for run in run_all(name, content):
            statuses[run.status] += 1

    fuzz()
    # Both ways out were taken: variants reached past the first check, and were caught.
    assert statuses[0] > 0 and statuses[1] + statuses[2] > 0, statuses

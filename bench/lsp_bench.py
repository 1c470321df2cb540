"""How soon `tabench lsp` pushes diagnostics after an edit of a 500-question rubric.

Builds a battery whose one rubric holds 500 questions (every field of the language used) in a
temporary folder, starts `python -m tabench_dsl lsp` as editors do (a subprocess over stdio),
opens the rubric, then sends edits one at a time (each turns a `gold` into `gloden` and back, so
every other edit has an error) and times each from the change sent to its diagnostics received.
The floor, measured in the same run, is linting that battery in-process (`lint_problems`, what the
server must do on each change at the least).

    python bench/lsp_bench.py [--questions 500] [--edits 20]

Prints e.g. `lsp diagnostics after an edit: median 95 ms, p90 110 ms (goal < 200 ms); floor (lint
in-process) 70 ms; ratio 1.4`; exits 0.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
GOAL_MS = 200.0


def _question(i: int) -> str:
    return (
        f"question q{i:04d} {{  # question {i}\n"
        f'  prompt "Which stages make up pipeline {i}?"\n'
        f'  gold "Ingest, Index, Recall, Compact {i}"\n'
        f'  accept "Ingest, Index, Recall and Compact {i}"\n'
        f'  trap "There is no Summarize stage in {i}."\n'
        '  structure "A list of stage names"\n'
        '  scoring """\n    All four are needed for a pass;\n    three of four is partial.\n    """\n'
        f'  facet missing_minor "omits the order of {i}"\n'
        f'  exemplar correct "Ingest, Index, Recall, Compact {i}." why "all four"\n'
        f'  exemplar partial "Ingest, Index." why "two of four"\n'
        f'  exemplar incorrect "Summarize {i}." why "the trap"\n'
        '  tags "bench"\n'
        "}\n"
    )


def build(root: Path, questions: int) -> Path:
    """The battery under `root`; its rubric's path."""
    (root / "battery.yaml").write_text(
        "name: lsp-bench\nscorer: tabench-1.1\npolicies: [house.policy]\nrubrics: [q.rubric]\n",
        encoding="utf-8",
    )
    (root / "house.policy").write_text("S1: Judge the substance.\nS2: Partial credit is not a pass.\n")
    rubric = root / "q.rubric"
    rubric.write_text("\n".join(_question(i) for i in range(questions)), encoding="utf-8")
    return rubric


def floor_ms(root: Path, runs: int = 5) -> float:
    """The median time to lint the battery in this process."""
    from tabench_dsl.language.problems import lint_problems

    lint_problems(root)  # warm: grammar, templates
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        lint_problems(root)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


async def measure(rubric: Path, edits: int) -> list[float]:
    """Milliseconds from each change sent to its diagnostics received."""
    client = LanguageClient("lsp-bench", "1")
    arrived: asyncio.Queue[lsp.PublishDiagnosticsParams] = asyncio.Queue()

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        arrived.put_nowait(params)

    await client.start_io(sys.executable, "-m", "tabench_dsl", "lsp", env={"PYTHONPATH": str(REPO)})
    await client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    client.initialized(lsp.InitializedParams())
    uri = rubric.resolve().as_uri()
    text = rubric.read_text(encoding="utf-8")
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=uri, language_id="tabench", version=1, text=text)
        )
    )
    await arrived.get()
    times = []
    line = 2  # the first question's gold line
    for version in range(2, edits + 2):
        word, other = ("gold", "gloden") if version % 2 == 0 else ("gloden", "gold")
        change = lsp.TextDocumentContentChangePartial(
            range=lsp.Range(
                start=lsp.Position(line=line, character=2),
                end=lsp.Position(line=line, character=2 + len(word)),
            ),
            text=other,
        )
        start = time.perf_counter()
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[change],
            )
        )
        published = await arrived.get()
        times.append((time.perf_counter() - start) * 1000)
        assert bool(published.diagnostics) == (other == "gloden"), published.diagnostics
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=500)
    parser.add_argument("--edits", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rubric = build(Path(folder), args.questions)
        floor = floor_ms(Path(folder))
        times = asyncio.run(measure(rubric, args.edits))
    median = statistics.median(times)
    p90 = sorted(times)[int(0.9 * (len(times) - 1))]
    verdict = "met" if median < GOAL_MS else "NOT met"
    print(
        f"lsp diagnostics after an edit ({args.questions} questions, {args.edits} edits): "
        f"median {median:.0f} ms, "
        f"p90 {p90:.0f} ms (goal < {GOAL_MS:.0f} ms: {verdict}); floor (lint in-process) {floor:.0f} ms; "
        f"ratio {median / floor:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

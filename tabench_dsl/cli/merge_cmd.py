"""`tabench merge OUT RESULTS...`: the results of several shards (`grade --shard K/N`) in one file.

The records of the inputs, in the order given, make OUT (review/merge.py): the last record of each
pair stands, so `totals OUT` counts what one unsharded grading would. The decisions files and batch
ledgers beside the inputs are joined beside OUT the same way (`OUT.decisions.jsonl`,
`OUT.batches.jsonl`). Pairs two inputs graded differently are named on stderr.

Decided where the spec is silent:
- OUT is written whole and then put in place (never through a link). An existing OUT holds
  someone's records: a merge into it is refused unless OUT is one of the inputs (`merge A A B`
  merges B into A) or `--force` says to replace its records; it must be a results file tabench
  wrote either way (its ledger likewise).
- A decision is never dropped: `OUT.decisions.jsonl` is joined from the inputs' decisions files,
  after OUT's own when OUT is not an input. OUT's batch ledger is the inputs' ledgers joined (it
  describes the batches of the records OUT now holds); with no input ledger, an old one is removed.
- Exit status 1 when some pairs were graded differently or some lines were not records (each named).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.display import shown
from ..core.errors import UsageError
from .command_help import add_command

#: Conflicts named on stderr; the rest are counted.
CONFLICTS_SHOWN = 20


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "merge",
        help="join the results files of several shards (grade --shard) into one",
        description="Join results files (the shards of one grading, `grade --shard K/N`) into OUT, "
        "with their decisions files and batch ledgers. The last record of each pair stands; pairs two "
        "inputs graded differently are named.",
        exit_codes=(
            (0, "merged"),
            (1, "some pairs were graded differently, or some lines were not records (each named)"),
        ),
    )
    parser.add_argument("out", type=Path, metavar="OUT", help="the merged results file to write")
    parser.add_argument(
        "results", type=Path, nargs="+", metavar="RESULTS", help="results files written by `tabench grade`"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace the records of an existing OUT that is not one of the inputs (its decisions are kept)",
    )
    parser.set_defaults(run=run)


def _check_outputs(out: Path, results: list[Path], *, force: bool) -> tuple[Path, Path, bool]:
    """Usage errors of OUT and the files beside it; their paths (decisions, ledger), and whether
    OUT is one of the inputs."""
    from ..grading.batch import ledger_path
    from ..outputs import check_output, is_decisions_file, is_results_file, same_file
    from ..store.decisions import decisions_path

    for path in results:
        if not path.is_file():
            raise UsageError(f"{shown(str(path))}: no such results file")
    out_is_input = any(same_file(out, path) for path in results)
    inputs: dict[str, str | Path | None] = {}
    for path in results:
        if out_is_input and same_file(out, path):
            continue  # read whole before OUT is replaced: merging into OUT loses nothing
        inputs[f"the results file {path}"] = path
        inputs[f"the decisions file {decisions_path(path)}"] = decisions_path(path)
        inputs[f"the batch ledger {ledger_path(path)}"] = ledger_path(path)
    check_output(out, option="OUT", kind="a results file", recognise=is_results_file, inputs=inputs)
    decisions, ledger = decisions_path(out), ledger_path(out)
    check_output(decisions, option="", kind="a decisions file", recognise=is_decisions_file, inputs=inputs)
    check_output(ledger, option="", kind="a batch ledger", recognise=_is_ledger, inputs=inputs)
    if not out_is_input and not force and out.is_file() and out.stat().st_size:
        raise UsageError(
            f"OUT {shown(str(out))} exists and holds records; name it among the inputs to merge into it "
            f"(tabench merge {shown(str(out))} {shown(str(out))} ...), or pass --force to replace them"
        )
    return decisions, ledger, out_is_input


def _is_ledger(path: Path) -> bool:
    import msgspec

    from ..grading.batch import Ended, Submitted
    from ..outputs import holds_records

    return holds_records(path, msgspec.json.Decoder(Submitted | Ended))


def run(args: argparse.Namespace) -> int:
    """Merge, say what was merged, return the exit status."""
    from ..grading.batch import ledger_path
    from ..review.merge import join_lines, merge_results
    from ..store.decisions import decisions_path, load_decisions

    decisions_out, ledger_out, out_is_input = _check_outputs(args.out, args.results, force=args.force)

    def valid_decisions(path: Path) -> None:  # a bad line: a UsageError naming path:line:col
        load_decisions(path)

    # Every decisions file is checked before anything is written; OUT's own come first, kept.
    kept = [] if out_is_input else [decisions_out]
    decision_sources = [*kept, *(decisions_path(p) for p in args.results)]
    for source in decision_sources:
        if source.is_file():
            valid_decisions(source)
    summary = merge_results(args.out, args.results)
    decided = join_lines(decisions_out, decision_sources)
    batches = join_lines(ledger_out, [ledger_path(p) for p in args.results])
    if not decided:  # OUT's own decisions were among the sources: no line anywhere, nothing lost
        decisions_out.unlink(missing_ok=True)
    if not batches:  # an earlier ledger (tabench's: checked) names batches of records OUT no longer holds
        ledger_out.unlink(missing_ok=True)
    for problem in summary.problems:
        print(f"tabench: warning: {shown(problem)} (skipped)", file=sys.stderr)
    for conflict in summary.conflicted[:CONFLICTS_SHOWN]:
        said = ", ".join(f"{shown(name)}: {verdict}" for name, verdict in conflict.verdicts)
        print(
            f"tabench: {shown(conflict.system)} / {shown(conflict.question)} graded differently ({said}); "
            "the last stands",
            file=sys.stderr,
        )
    if summary.conflicts > CONFLICTS_SHOWN:
        print(
            f"tabench: and {summary.conflicts - CONFLICTS_SHOWN} more pair(s) graded differently",
            file=sys.stderr,
        )
    print(
        f"merged {summary.records} record(s) of {summary.pairs} pair(s) from {summary.inputs} file(s) "
        f"into {shown(str(args.out))}; {decided} decision(s), {batches} ledger line(s); "
        f"{summary.conflicts} pair(s) graded differently",
        file=sys.stderr,
    )
    return 1 if summary.conflicts or summary.problems else 0

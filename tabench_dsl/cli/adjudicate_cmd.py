"""`tabench adjudicate RESULTS.jsonl [--reviewer NAME] [--battery PATH]`: decide in the terminal.

Walks the undecided `adjudicate` answers one at a time: the question, the answer, every judge attempt
with its raw reply and the reason, then asks for p(ass) / f(ail) / s(kip) / q(uit) and an optional
note. Input is read line by line from stdin, so a script (or a test) can pipe the keys in. Each
decision is appended to RESULTS.decisions.jsonl the moment it is made; end of input quits.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..core.display import shown
from .battery_flags import add_allow_dir
from .command_help import add_command
from .run_problems import warn_run_problems

if TYPE_CHECKING:
    from ..core.records import Record

_KEYS = {
    "p": "pass",
    "pass": "pass",
    "f": "fail",
    "fail": "fail",
    "s": "skip",
    "skip": "skip",
    "q": "quit",
    "quit": "quit",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "adjudicate",
        help="decide a results file's adjudicate answers in the terminal",
        description="Walk the undecided adjudicate answers of a results file one at a time and ask "
        "p(ass), f(ail), s(kip) or q(uit), reading stdin line by line; each decision is appended to "
        "RESULTS.decisions.jsonl as it is made.",
        exit_codes=((0, "every answer decided or skipped, or quit"),),
    )
    parser.add_argument(
        "results", type=Path, metavar="RESULTS", help="a results JSONL file written by `tabench grade`"
    )
    parser.add_argument(
        "--reviewer", default=None, metavar="NAME", help="name recorded with decisions (default: login name)"
    )
    parser.add_argument(
        "--battery",
        type=Path,
        default=None,
        metavar="BATTERY",
        help="the battery graded, to show each question's gold answer",
    )
    add_allow_dir(parser)
    parser.set_defaults(run=run)


def _block(text: str, indent: str = "    ") -> str:
    """A multi-line text (answer, gold, reason, reply) indented, every line shown as text."""
    if not text:
        return indent + "(empty)"
    return "\n".join(indent + line for line in shown(text, lines=True).split("\n"))


def show(record: Record, number: int, count: int, gold: str | None, out: TextIO) -> None:
    """Print one adjudicate record as a reviewer needs to see it."""
    from ..core.records import CAUSE_TEXTS

    cause = record.cause or "unknown"
    print(f"\n=== [{number}/{count}] {shown(record.system)} · {shown(record.question)} ===", file=out)
    print(f"adjudicate ({cause}): {CAUSE_TEXTS.get(cause, 'the judge could not settle it')}", file=out)
    if gold is not None:
        print(f"Gold:\n{_block(gold)}", file=out)
    print(f"Answer:\n{_block(record.graded_answer)}", file=out)
    if record.reasoning_cut is not None:  # graded on its final answer: say what was cut
        print(f"    ({record.reasoning_cut.describe()})", file=out)
    print(f"Reason:\n{_block(record.reason)}", file=out)
    for i, attempt in enumerate(record.attempts, start=1):
        raw = "(no reply)" if attempt.raw is None else attempt.raw
        print(f"Attempt {i} ({attempt.kind}) raw reply:\n{_block(raw)}", file=out)


def _ask(prompt: str, stdin: TextIO, out: TextIO) -> str | None:
    print(prompt, end="", file=out, flush=True)
    line = stdin.readline()
    if not line:
        print(file=out)
        return None
    return line.strip()


def run(args: argparse.Namespace, stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    from ..outputs import check_decisions_out
    from ..review.decisions import append_decision, default_reviewer, make_decision
    from ..review.viewer.run import load_run

    stdin = stdin or sys.stdin
    out = out or sys.stdout
    run_data = load_run(args.results, battery=args.battery, allow_dirs=args.allow_dirs)
    check_decisions_out(run_data.decisions_path, results=args.results)
    warn_run_problems(run_data)
    reviewer = args.reviewer or default_reviewer()
    queue = [r for r in run_data.records if r.verdict == "adjudicate" and r.decision is None]
    if not queue:
        print(f"Nothing to decide: no undecided adjudicate answer in {shown(str(args.results))}.", file=out)
        return 0
    print(
        f"{len(queue)} answer(s) to decide; decisions go to {shown(str(run_data.decisions_path))} as "
        f"{shown(reviewer)}.",
        file=out,
    )
    decided = skipped = 0
    for number, record in enumerate(queue, start=1):
        question = run_data.compiled.questions.get(record.question) if run_data.compiled else None
        show(record, number, len(queue), None if question is None else question.gold, out)
        choice = None
        while choice is None:
            key = _ask("Decide: [p]ass  [f]ail  [s]kip  [q]uit > ", stdin, out)
            if key is None:
                choice = "quit"
            else:
                choice = _KEYS.get(key.lower())
                if choice is None:
                    print(f"  {shown(key)!r}: type p, f, s or q", file=out)
        if choice == "quit":
            break
        if choice == "skip":
            skipped += 1
            continue
        note = _ask("Note (optional, Enter for none) > ", stdin, out) or ""
        append_decision(run_data.decisions_path, make_decision(record, choice, reviewer=reviewer, note=note))
        decided += 1
        print(f"  recorded: {choice}", file=out)
    left = len(queue) - decided
    print(f"\n{decided} decided, {skipped} skipped, {left} still undecided.", file=out)
    return 0

"""`tabench adjudicate RESULTS.jsonl [--reviewer NAME] [--battery PATH]`: decide in the terminal.

Walks the undecided `adjudicate` answers one at a time: the question, the answer, every judge attempt
with its raw reply and the reason, then asks for p(ass) / f(ail) / s(kip) / q(uit) and an optional
note. Input is read line by line from stdin, so a script (or a test) can pipe the keys in. Each
decision is appended to RESULTS.decisions.jsonl the moment it is made; end of input quits.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from .battery_flags import add_allow_dir
from .warnings import warn_run_problems

if TYPE_CHECKING:
    from ..records import Record

#: Control characters (but tab and line break) an answer might use to rewrite the terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_KEYS = {"p": "pass", "pass": "pass", "f": "fail", "fail": "fail", "s": "skip", "skip": "skip",
         "q": "quit", "quit": "quit"}
_CAUSES = {
    "contradiction": "the judge said fail with a reason that reads as a pass, again after the stern retry",
    "malformed": "the judge's reply could not be decoded as a verdict, even after one re-ask",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("adjudicate", help="decide a results file's adjudicate answers in the terminal")
    parser.add_argument("results", type=Path, help="a results JSONL file written by `tabench grade`")
    parser.add_argument("--reviewer", default=None, help="name recorded with decisions (default: login name)")
    parser.add_argument("--battery", type=Path, default=None,
                        help="the battery graded, to show each question's gold answer")
    add_allow_dir(parser)
    parser.set_defaults(run=run)


def safe(text: str) -> str:
    """`text` with terminal control characters shown as `\\xNN`, so an answer cannot drive the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _block(text: str, indent: str = "    ") -> str:
    return "\n".join(indent + line for line in safe(text).split("\n")) if text else indent + "(empty)"


def show(record: Record, number: int, count: int, gold: str | None, out: TextIO) -> None:
    """Print one adjudicate record as a reviewer needs to see it."""
    cause = record.cause or "unknown"
    print(f"\n=== [{number}/{count}] {safe(record.system)} · {safe(record.question)} ===", file=out)
    print(f"adjudicate ({cause}): {_CAUSES.get(cause, 'the judge could not settle it')}", file=out)
    if gold is not None:
        print(f"Gold:\n{_block(gold)}", file=out)
    print(f"Answer:\n{_block(record.answer)}", file=out)
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
    from ..decisions import append_decision, default_reviewer, make_decision
    from ..viewer.run import load_run

    stdin = stdin or sys.stdin
    out = out or sys.stdout
    run_data = load_run(args.results, battery=args.battery, allow_dirs=args.allow_dirs)
    warn_run_problems(run_data)
    reviewer = args.reviewer or default_reviewer()
    queue = [r for r in run_data.records if r.verdict == "adjudicate" and r.decision is None]
    if not queue:
        print(f"Nothing to decide: no undecided adjudicate answer in {args.results}.", file=out)
        return 0
    print(f"{len(queue)} answer(s) to decide; decisions go to {run_data.decisions_path} as {reviewer}.",
          file=out)
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
                    print(f"  {safe(key)!r}: type p, f, s or q", file=out)
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

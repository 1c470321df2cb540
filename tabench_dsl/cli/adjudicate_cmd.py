"""`tabench adjudicate RESULTS.jsonl [--reviewer NAME] [--battery PATH] [--audit N [--seed S]]`: decide in
the terminal (`--audit`: a blind audit of decided answers instead, `audit_session`).

Walks the undecided `adjudicate` answers one at a time: the question, with `--battery` its key (the
gold, the accepted variants, the trap and the scoring text the judge was given, read from the
compiled prompt as the viewer reads it, `review.viewer.question_key`), the answer, every
judge attempt with its raw reply and the reason, then asks for p(ass) / f(ail) / s(kip) / q(uit)
and an optional note: the text after the key on its line, or, at a terminal, the line typed when
asked for one. Input is read line by line from stdin, so a script (or a test) can pipe the keys in:
from a pipe every line is a decision (with its note on the same line), never a note. Each decision
is appended to RESULTS.decisions.jsonl the moment it is made; end of input quits.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..core.display import shown
from ..core.errors import UsageError
from .battery_flags import add_allow_dir
from .command_help import add_command
from .run_problems import warn_run_problems

if TYPE_CHECKING:
    from ..core.records import Record
    from ..review.viewer.question_key import QuestionKey

#: Asked for each answer; what follows the key on the line is the decision's note.
DECIDE_PROMPT = "Decide: [p]ass  [f]ail  [s]kip  [q]uit (a note may follow: f names the trap) > "

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
        "RESULTS.decisions.jsonl as it is made. A note may follow the key on its line (f names the "
        "trap); at a terminal, a decision typed without one is followed by a question for a note "
        "(Enter for none). From a pipe every line is a decision, its note on the same line: no note "
        "line is read after it.",
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
        help="the battery graded, to show each question's gold, accepted variants, trap and scoring text",
    )
    parser.add_argument(
        "--audit",
        type=int,
        default=None,
        metavar="N",
        help="instead, audit N answers the judge or T1 decided, blind: drawn by system and verdict, "
        "shown without the system or the judge's verdict until you decide; kept apart as audits",
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="the seed --audit draws its answers with (default 0)"
    )
    parser.add_argument(
        "--by",
        choices=("stratified", "uncertainty"),
        default="stratified",
        help="how --audit draws: stratified by system and verdict (default), or uncertainty: more often "
        "where the judge was unsure, each audit weighted by its chance in the validated score",
    )
    add_allow_dir(parser)
    parser.set_defaults(run=run)


def _block(text: str, indent: str = "    ") -> str:
    """A multi-line text (answer, gold, reason, reply) indented, every line shown as text."""
    if not text:
        return indent + "(empty)"
    return "\n".join(indent + line for line in shown(text, lines=True).split("\n"))


def show(
    record: Record, number: int, count: int, gold: str | None, out: TextIO, key: QuestionKey | None = None
) -> None:
    """Print one adjudicate record as a reviewer needs to see it: with the question's `key` (from
    the battery given) its accepted variants, trap and scoring text after the gold."""
    from ..core.records import CAUSE_TEXTS

    cause = record.cause or "unknown"
    print(f"\n=== [{number}/{count}] {shown(record.system)} · {shown(record.question)} ===", file=out)
    print(f"adjudicate ({cause}): {CAUSE_TEXTS.get(cause, 'the judge could not settle it')}", file=out)
    if gold is not None:
        print(f"Gold:\n{_block(gold)}", file=out)
    if key is not None:
        for variant in key.accept:
            print(f"Accepted variant:\n{_block(variant)}", file=out)
        if key.trap is not None:
            print(f"Trap (the truth a trapped answer denies):\n{_block(key.trap)}", file=out)
        if key.scoring is not None:
            print(f"Scoring:\n{_block(key.scoring)}", file=out)
        if key.source == "battery":
            print(
                "    (today's battery: its prompt differs from the one this answer was graded with)", file=out
            )
    print(f"Answer:\n{_block(record.graded_answer)}", file=out)
    if record.reasoning_cut is not None:  # graded on its final answer: say what was cut
        print(f"    ({record.reasoning_cut.describe()})", file=out)
    print(f"Reason:\n{_block(record.reason)}", file=out)
    for i, attempt in enumerate(record.attempts, start=1):
        raw = "(no reply)" if attempt.raw is None else attempt.raw
        print(f"Attempt {i} ({attempt.kind}) raw reply:\n{_block(raw)}", file=out)
    for i, ask in enumerate(record.repetitions, start=1):  # --repeat: each ask of the judge
        print(f"Ask {i} of {len(record.repetitions)}: {ask.verdict}\n{_block(ask.reason)}", file=out)


def run(args: argparse.Namespace, stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    from ..outputs import check_decisions_out
    from ..review.decisions import default_reviewer, make_decision
    from ..review.viewer.question_key import question_key
    from ..review.viewer.run import load_run
    from ..store.decisions import append_decision
    from .audit_session import ask_line, decision_line, note_after

    stdin = stdin or sys.stdin
    out = out or sys.stdout
    if args.audit is not None and args.audit < 1:
        raise UsageError("--audit must be at least 1")
    run_data = load_run(args.results, battery=args.battery, allow_dirs=args.allow_dirs)
    check_decisions_out(run_data.decisions_path, results=args.results)
    warn_run_problems(run_data)
    reviewer = args.reviewer or default_reviewer()
    if args.audit is not None:
        from .audit_session import run_audit

        return run_audit(
            run_data, args.audit, seed=args.seed, reviewer=reviewer, stdin=stdin, out=out, by=args.by
        )
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
        answer_key = question_key(record, run_data.compiled)
        show(record, number, len(queue), None if answer_key is None else answer_key.gold, out, answer_key)
        choice, inline = None, ""
        while choice is None:
            line = ask_line(DECIDE_PROMPT, stdin, out)
            if line is None:
                choice = "quit"
            else:
                choice, inline = decision_line(line, _KEYS)
                if choice is None and line:  # an empty line asks again
                    print(f"  {shown(line)!r}: type p, f, s or q", file=out)
        if choice == "quit":
            break
        if choice == "skip":
            skipped += 1
            continue
        note = note_after(inline, stdin, out)
        append_decision(run_data.decisions_path, make_decision(record, choice, reviewer=reviewer, note=note))
        decided += 1
        print(f"  recorded: {choice}", file=out)
    left = len(queue) - decided
    print(f"\n{decided} decided, {skipped} skipped, {left} still undecided.", file=out)
    return 0

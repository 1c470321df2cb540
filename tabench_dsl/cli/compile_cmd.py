"""`tabench compile`: print a battery's exact judge prompts, or lock and check their hashes.

Output is written as UTF-8 bytes whatever the locale, each prompt exactly as the judge receives it
followed by one line break, so `tabench compile B --question q > f` holds the prompt plus "\\n".
"""

from __future__ import annotations

import argparse
import difflib
import gc
import shlex
import sys
from typing import Any

from ..core.display import json_for_terminal, shown
from ..core.errors import UsageError
from .battery_flags import add_allow_dir
from .command_help import add_command

PARTS: tuple[str, ...] = ("system", "user", "stern")

_DESCRIPTION = """\
Print the exact prompts of a battery's questions.

Default: the SYSTEM prompt of every question; with --answer, its SYSTEM, USER and STERN prompts
(what the judge receives). Each prompt is printed as its exact text followed by one line break;
when several parts or questions are printed, a line `## <question> <part>` precedes each, and a
question's `match` check follows its prompts as `## <question> match ...` (on stderr when one
prompt alone is printed; `"match"` in --json). Without --answer, the USER and STERN prompts show
the seed's placeholder {{candidate answer}} where the answer goes; with it, they show the answer
as the judge receives it, its reasoning blocks cut as grading cuts them.

--lock writes tabench.lock beside the manifest (the sha256 of every question's SYSTEM prompt);
--check compares against it, names every question that drifted, was added or was removed, and
exits 1 on any difference (0 when all match)."""


def add_parser(subparsers: Any) -> None:
    """Register `tabench compile`."""
    parser = add_command(
        subparsers,
        "compile",
        help="print the exact judge prompts of a battery; lock or check their hashes",
        description=_DESCRIPTION,
        exit_codes=(
            (0, "printed, locked, or every prompt matches the lock"),
            (1, "--check found a difference"),
        ),
    )
    parser.add_argument("battery", metavar="BATTERY", help="the battery folder (or its battery.yaml)")
    add_allow_dir(parser)
    parser.add_argument(
        "--question",
        metavar="ID",
        action="append",
        help="only this question (repeat for several; default: every question, in battery order)",
    )
    parser.add_argument(
        "--answer",
        metavar="TEXT",
        help="the candidate answer for the USER and STERN prompts, as the judge receives it: its "
        "reasoning blocks (<think>...</think>, or the manifest's reasoning_tags) cut as grading cuts "
        "them (default: {{candidate answer}})",
    )
    parser.add_argument(
        "--part",
        choices=(*PARTS, "all", "schema"),
        help="which prompt to print (default: system, or all with --answer; all = system, user, stern; "
        "schema = the JSON "
        "Schema of the scorer's reply, once for the battery)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per question and line: {"question", "system", "sha256"}, '
        'plus "user" and "stern" when --answer is given',
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--lock", action="store_true", help="write tabench.lock beside the manifest")
    mode.add_argument(
        "--check", action="store_true", help="exit 1 naming each question whose prompt drifted from the lock"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Compile the battery and print what the flags select; the exit status."""
    if (args.lock or args.check) and (args.question or args.answer is not None or args.part or args.json):
        flag = "--lock" if args.lock else "--check"
        raise UsageError(
            f"{flag} covers the whole battery; it takes no --question, --answer, --part or --json"
        )
    if args.json and args.part:
        raise UsageError("--json prints the system prompt (and user and stern with --answer); drop --part")

    # Parsing a battery makes hundreds of thousands of small objects and no garbage cycles worth
    # collecting; the cyclic collector's passes over them cost a quarter of the time. It stays off
    # until the prompts are written: switched on earlier, its first passes would walk every object
    # the battery made while it was off.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _compile(args)
    finally:
        if gc_was_enabled:
            gc.enable()


def _compile(args: argparse.Namespace) -> int:
    from ..language.battery import load_battery  # imported here so `tabench --help` stays fast
    from ..language.render import ANSWER_PLACEHOLDER, compile_battery

    battery = load_battery(args.battery, allow_dirs=args.allow_dirs)
    compiled = compile_battery(battery)
    if args.lock or args.check:
        return _lock_or_check(args, battery.manifest, compiled)

    qids = _select(compiled, args.question)
    given = None if args.answer is None else _as_graded(args.answer, compiled.reasoning_tags)
    if args.part == "schema":
        from ..core.reply_schema import schema_text

        _write((schema_text(compiled.settings.facets) + "\n").encode("utf-8"))
        return 0
    if args.json:
        _write_json(compiled, qids, given)
        return 0

    # An answer shows only in the USER and STERN prompts: given one, a reader wants to see them.
    part = args.part or ("all" if given is not None else "system")
    parts = PARTS if part == "all" else (part,)
    answer = given if given is not None else ANSWER_PLACEHOLDER
    headers = len(qids) > 1 or len(parts) > 1
    texts: list[str] = []
    for qid in qids:
        for part in parts:
            if headers:
                texts.append(f"## {qid} {part}\n")
            if part == "system":
                texts.append(compiled.questions[qid].system)
            elif part == "user":
                texts.append(compiled.user.fill(answer))
            else:
                texts.append(compiled.stern.fill(answer))
            texts.append("\n")
        check = compiled.questions[qid].match
        if check is not None:  # run before the judge, never part of a prompt: shown beside them
            if headers:
                texts.append(f"## {qid} match {check.field_text()}\n")
            else:
                print(
                    f"tabench: {qid}: match {shown(check.field_text())} (before the judge)", file=sys.stderr
                )
    text = "".join(texts)
    if _to_terminal():  # a file or a pipe gets the exact prompts; a screen gets them as text
        text = shown(text, lines=True)
    _write(text.encode("utf-8"))
    return 0


def _write_json(compiled: Any, qids: list[str], answer: str | None) -> None:
    """`compile --json`: one object per question, its SYSTEM prompt and sha256 (with `answer`, its
    USER and STERN prompts), and its `match` check when it has one."""
    import msgspec

    # Each line encoded at the end of one growing buffer: no bytes object per line, no join.
    encode_into = msgspec.json.Encoder().encode_into
    lines = bytearray()
    for qid in qids:
        q = compiled.questions[qid]
        obj = {"question": qid, "system": q.system, "sha256": q.sha256}
        if q.match is not None:
            obj["match"] = q.match.field_text()
        if answer is not None:
            obj["user"] = compiled.user.fill(answer)
            obj["stern"] = compiled.stern.fill(answer)
        encode_into(obj, lines, -1)
        lines += b"\n"
    _write(json_for_terminal(bytes(lines)) if _to_terminal() else lines)


def _as_graded(answer: str, tags: tuple[tuple[str, str], ...]) -> str:
    """`answer` as the judge receives it: its reasoning blocks cut (`core.reasoning`, as grading
    cuts them), saying on stderr how many, so the prompt shown is the prompt sent."""
    from ..core.reasoning import cut_reasoning

    cut = cut_reasoning(answer, tags)
    if cut.blocks:
        print(
            f"tabench: --answer: {cut.blocks} reasoning block(s) cut, as grading cuts them: the judge "
            "never receives them",
            file=sys.stderr,
        )
    return cut.final


def _select(compiled: Any, wanted: list[str] | None) -> list[str]:
    if not wanted:
        return list(compiled.questions)
    for qid in wanted:
        if qid not in compiled.questions:
            close = difflib.get_close_matches(qid, list(compiled.questions), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UsageError(f"no question {qid!r} in battery {compiled.name}{hint}")
    return list(dict.fromkeys(wanted))


def _lock_or_check(args: argparse.Namespace, manifest: str, compiled: Any) -> int:
    from ..language.lock import check_lock, lock_path, read_lock, write_lock

    path = lock_path(manifest)
    if args.lock:
        from ..outputs import check_output, is_lock_file

        check_output(path, option="--lock", kind="a prompt lock", recognise=is_lock_file)
        write_lock(compiled, path)
        _write(f"wrote {shown(str(path))}: {len(compiled.questions)} question(s)\n".encode())
        return 0
    drifts = check_lock(compiled, read_lock(path))
    lines = []
    for drift in drifts:
        lines.append(shown(drift.describe()))  # question ids read from the lock file
        lines.extend(_changed_lines(drift))
    where = shown(str(path))
    if drifts:
        battery = shlex.quote(str(args.battery))
        lines.append(
            f"{where}: {len(drifts)} difference(s); see a prompt with `tabench compile {battery} "
            f"--question ID --part system`, accept them with `tabench compile {battery} --lock`"
        )
    else:
        lines.append(f"{where}: all {len(compiled.questions)} prompt(s) match")
    _write(("\n".join(lines) + "\n").encode("utf-8"))
    return 1 if drifts else 0


#: Lines of a drifted prompt `--check` shows (the rest are counted).
SHOWN_CHANGED_LINES = 12


def _changed_lines(drift: Any) -> list[str]:
    """What changed in a drifted prompt, indented under its line: the lines it has now that the
    locked prompt lacked (`+`), then how many locked lines are gone; a lock that keeps no lines
    says how to get them."""
    if drift.kind != "changed":
        return []
    if drift.added_lines is None:
        return ["    (this lock keeps no prompt lines: `--lock` again to see what changes next time)"]
    added = [f"    + {shown(line)}" for line in drift.added_lines[:SHOWN_CHANGED_LINES]]
    if len(drift.added_lines) > SHOWN_CHANGED_LINES:
        added.append(f"    + ... {len(drift.added_lines) - SHOWN_CHANGED_LINES} more line(s)")
    if drift.gone_lines:
        added.append(f"    - {drift.gone_lines} line(s) of the locked prompt no longer in it")
    return added


def _to_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _write(data: bytes | bytearray) -> None:
    # UTF-8 whatever the locale: write bytes under the text layer, after flushing anything it holds.
    out = sys.stdout
    out.flush()
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(data.decode("utf-8"))
        out.flush()
        return
    buffer.write(data)
    buffer.flush()

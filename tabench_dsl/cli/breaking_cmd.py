"""`tabench breaking OLD NEW [--git BATTERY] [--json]`: which old results an edit of a battery
leaves comparable. Exit 1 when some are no longer comparable (a question removed, its key or its
prompt changed)."""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from ..core.display import shown
from .battery_flags import add_allow_dir
from .command_help import add_command


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "breaking",
        help="say which questions an edit of a battery changed and whether old results still compare",
        description="Compare two versions of a battery (two folders, or with --git two revisions of "
        "one) question by question: removed, added, renamed (same prompt, new id), prompt (its SYSTEM "
        "bytes differ), key (gold, accepted variants, trap or T1 changed) or cosmetic (source text "
        "only). Results graded before a removed, prompt or key change are no longer comparable.",
        exit_codes=((0, "every old result is still comparable"), (1, "some old results are not")),
    )
    parser.add_argument("old", metavar="OLD", help="the old battery folder (with --git: a revision)")
    parser.add_argument("new", metavar="NEW", help="the new battery folder (with --git: a revision)")
    parser.add_argument(
        "--git",
        metavar="BATTERY",
        default=None,
        help="OLD and NEW are git revisions of the battery folder BATTERY (e.g. HEAD~1 HEAD)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    add_allow_dir(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..language.breaking import breaks, compare

    with tempfile.TemporaryDirectory(prefix="tabench-breaking-") as scratch:
        old_path, new_path = _folders(args, Path(scratch))
        old, new = _side(old_path, args.allow_dirs), _side(new_path, args.allow_dirs)
    changes = compare(old, new)
    broken = breaks(changes)
    if args.json:
        document = {
            "format_version": 1,
            "old": args.old,
            "new": args.new,
            "breaking": broken,
            "changes": [c.as_json() for c in changes],
        }
        print(json.dumps(document, indent=2, ensure_ascii=True))
        return 1 if broken else 0
    for change in changes:
        print(_line(change))
    print(summary_line(changes, broken))
    return 1 if broken else 0


def _folders(args: argparse.Namespace, scratch: Path) -> tuple[str | Path, str | Path]:
    if args.git is None:
        return args.old, args.new
    from ..language.revisions import battery_at_revision

    return (
        battery_at_revision(args.git, args.old, scratch / "old"),
        battery_at_revision(args.git, args.new, scratch / "new"),
    )


def _side(path: str | Path, allow_dirs: list):
    from ..language.battery import load_battery
    from ..language.breaking import side_of
    from ..language.render import compile_battery

    battery = load_battery(path, allow_dirs=allow_dirs)
    return side_of(battery, compile_battery(battery))


def _line(change) -> str:
    if change.kind == "renamed":
        name = f"{shown(change.old_id)} -> {shown(change.new_id)}"
    else:
        name = shown(change.old_id if change.old_id is not None else change.new_id)
    return f"{change.kind:<9} {name}"


def summary_line(changes: list, broken: bool) -> str:
    from ..language.breaking import BREAKING_KINDS, KINDS

    counts = {kind: sum(1 for c in changes if c.kind == kind) for kind in KINDS}
    listed = ", ".join(f"{kind} {n}" for kind, n in counts.items() if n) or "no change"
    if broken:
        n = sum(counts[k] for k in BREAKING_KINDS)
        return f"breaking: old results of {n} question(s) are no longer comparable ({listed})"
    return f"not breaking: every old result is still comparable ({listed})"

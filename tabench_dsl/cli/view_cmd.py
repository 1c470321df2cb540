"""`tabench view RESULTS.jsonl [--port N] [--battery PATH] [--reviewer NAME] [--no-browser]`.

Serves the results viewer on 127.0.0.1 (port 0, the default, picks a free port) and prints its URL.
Decisions made on the page are appended to RESULTS.decisions.jsonl; the results file is only read.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from pathlib import Path

from ..core import interrupts
from ..core.errors import UsageError
from .battery_flags import add_allow_dir
from .command_help import add_command
from .compare_flags import add_compare_option, load_compared
from .price_flags import add_price_option, price_option
from .run_problems import warn_run_problems
from .tag_flags import add_tag_option


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "view",
        help="browse a results file and decide adjudicate answers in a browser",
        description="Serve the results viewer on 127.0.0.1 and print its URL: totals, every answer "
        "with its judge attempts, and the adjudicate answers to decide. Decisions are appended to "
        "RESULTS.decisions.jsonl; the results file is only read. Runs until interrupted.",
        exit_codes=((0, "stopped (lines that are not records are named on stderr)"),),
    )
    parser.add_argument(
        "results", type=Path, metavar="RESULTS", help="a results JSONL file written by `tabench grade`"
    )
    parser.add_argument(
        "--port", type=int, default=0, metavar="N", help="port on 127.0.0.1 (default 0: a free one)"
    )
    parser.add_argument(
        "--battery",
        type=Path,
        default=None,
        metavar="BATTERY",
        help="the battery graded, to show each answer's compiled prompt",
    )
    parser.add_argument(
        "--reviewer", default=None, metavar="NAME", help="name recorded with decisions (default: login name)"
    )
    parser.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")
    add_allow_dir(parser)
    add_tag_option(parser)
    add_compare_option(parser)
    add_price_option(parser, use="prices every judge call, over the price its record carries")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..outputs import check_decisions_out
    from ..review.decisions import default_reviewer
    from ..review.viewer.app import serve
    from ..review.viewer.disk_index import load_disk_index
    from ..review.viewer.queries import Index
    from ..review.viewer.run import load_run

    price = price_option(args)
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: not a port number")
    started = time.monotonic()
    reviewer = args.reviewer or default_reviewer()
    index: Index
    if args.compare is None:  # the records stay in the file: any size starts in a second or two
        index = load_disk_index(
            args.results,
            battery=args.battery,
            allow_dirs=args.allow_dirs,
            tags=args.tags,
            price=price,
            reviewer=reviewer,
        )
    else:  # beside a second grading, every record of both is held in memory
        run_data = load_run(args.results, battery=args.battery, allow_dirs=args.allow_dirs, tags=args.tags)
        run_data.price = price
        index = Index(run_data, reviewer=reviewer, compare=load_compared(args, run_data))
    check_decisions_out(index.run.decisions_path, results=args.results)  # decisions are appended there
    index.totals()
    warn_run_problems(index.run)

    def ready(url: str) -> None:
        print(
            f"tabench view: {len(index.records)} answers indexed in {time.monotonic() - started:.1f} s; "
            f"serving {url}  (Ctrl-C stops)",
            flush=True,
        )
        if not args.no_browser:
            open_browser(url)

    try:
        asyncio.run(serve(index, port=args.port, on_ready=ready))
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
    except KeyboardInterrupt:  # Ctrl-C is how the viewer stops (exit 0, as its --help says)
        interrupts.stopped_here()
        print("tabench view: stopped", file=sys.stderr)
    return 0


def open_browser(url: str) -> None:
    """Open `url` in a graphical browser, in a thread: a console browser must not block the server.

    Without a display (a server over SSH) nothing is opened; the printed URL is enough.
    """
    graphical = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if sys.platform.startswith("linux") and not graphical:
        print("tabench view: no display found; open the URL above in a browser", flush=True)
        return
    import webbrowser  # here: it imports what only opening a browser needs

    threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

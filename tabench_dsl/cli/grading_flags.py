"""The grading options `grade` and `calibrate` share: one definition, so both commands name, word,
default and check them alike, and both build the same `session.GradingOptions` from them.

--judge (given more than once: a judge panel), --panel-rule, --t1-audit, --repeat, --model,
--concurrency, --cache/--no-cache, --retries, --rate-limit-wait, --timeout, --rpm, --tpm,
--max-answer-bytes, --price, the decoding settings (`decoding_flags`: --temperature, --max-tokens,
--reasoning-effort, --thinking-budget) and what every request adds (`request_flags`: --structured,
--judge-param, --judge-header). `grading_options` reads them once, raising the same `UsageError`
in both commands.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.display import shown
from ..core.errors import UsageError
from .decoding_flags import add_decoding_options, decoding_flags
from .price_flags import add_price_option, price_option
from .request_flags import add_request_options, request_options

if TYPE_CHECKING:
    from ..grading.session import GradingOptions


class _JudgeAction(argparse.Action):
    """`--judge`, which may be given more than once: every judge name in order goes to `judges`, and the
    first stays `judge`, as the commands that name one judge (a replayed file) read it."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        judges = [*(getattr(namespace, "judges", None) or []), values]
        namespace.judges = judges
        namespace.judge = judges[0]


#: `--rate-limit-wait`'s default, in minutes (`GradingOptions.rate_limit_wait`).
DEFAULT_RATE_LIMIT_WAIT_MINUTES = 30.0


def add_grading_options(parser: argparse.ArgumentParser) -> None:
    """Add the shared grading options to `parser` (a `grade` or `calibrate` parser), in the order
    their help lists them: the judge, the transport, the price, what every request adds, decoding."""
    add_judge_options(parser)
    add_transport_options(parser)
    add_price_option(parser, use="recorded with every record (over the manifest's judge.price)")
    add_request_options(parser)
    add_decoding_options(parser)


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    """`--judge` (a panel when repeated), `--panel-rule`, `--t1-audit`, `--repeat` and `--model`."""
    add = parser.add_argument
    add(
        "--judge",
        default=None,
        action=_JudgeAction,
        metavar="JUDGE",
        help="builtin | openai:MODEL | anthropic:MODEL | azure:DEPLOYMENT | azure:v1:MODEL | URL | "
        "replay:RESULTS.jsonl (default: the manifest's "
        "judge.backend, else openai/anthropic for a named model when their environment is set; "
        "builtin only when no model is named); given more than once, the judges grade as a panel",
    )
    parser.set_defaults(judges=None)
    add(
        "--panel-rule",
        choices=("majority", "unanimous"),
        default=None,
        help="how a judge panel's votes make its verdict (default: the manifest's judge.rule, else majority)",
    )
    add(
        "--t1-audit",
        type=float,
        default=None,
        metavar="F",
        help="also send this share (0 to 1) of the T1 passes to the judge, chosen by a hash of the "
        "(system, question) pair; the T1 pass stands and totals report T1's precision against the judge",
    )
    add(
        "--repeat",
        type=int,
        default=1,
        metavar="K",
        help="ask the judge K times about each answer it grades (each ask cached apart); asks that "
        "disagree end adjudicate, cause unstable, and totals report the flip rate (default 1)",
    )
    add("--model", default=None, metavar="M", help="the judge model (with a URL judge, or to override)")


def add_transport_options(parser: argparse.ArgumentParser) -> None:
    """`--concurrency`, the reply cache, `--retries`, `--rate-limit-wait`, `--timeout`, `--rpm`,
    `--tpm` and `--max-answer-bytes`: how the judge calls travel."""
    add = parser.add_argument
    add("--concurrency", type=int, default=8, metavar="N", help="judge calls in flight at most (default 8)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--cache",
        default=None,
        metavar="PATH",
        help="reply cache file (default: $TABENCH_CACHE, else tabench/cache.sqlite in $XDG_CACHE_HOME "
        "or ~/.cache)",
    )
    group.add_argument("--no-cache", action="store_true", help="neither read nor write the reply cache")
    add(
        "--retries",
        type=int,
        default=5,
        metavar="N",
        help="transport retries after the first try of each judge call (default 5); rate limits "
        "are waited out and not counted",
    )
    add(
        "--rate-limit-wait",
        type=float,
        default=DEFAULT_RATE_LIMIT_WAIT_MINUTES,
        metavar="MINUTES",
        help="how long one judge call may keep being rate limited before it ends in error "
        f"(default {DEFAULT_RATE_LIMIT_WAIT_MINUTES:g})",
    )
    add("--timeout", type=float, default=120.0, metavar="S", help="seconds per judge call (default 120)")
    add("--rpm", type=float, default=None, metavar="N", help="at most this many requests per minute")
    add("--tpm", type=float, default=None, metavar="N", help="at most this many tokens per minute")
    add(
        "--max-answer-bytes",
        type=int,
        default=None,
        metavar="N",
        help="an answer longer than N bytes of UTF-8 is not sent to the judge and ends adjudicate "
        "(default 262144: 256 KiB)",
    )


def grading_options(args: argparse.Namespace) -> GradingOptions:
    """The `session.GradingOptions` of a grade, calibrate or probe command line, read from `args`
    once and checked: an option out of range is a `UsageError` naming it. The commands pass the
    result on; nothing reads these flags from the `Namespace` again."""
    from ..grading.route import MAX_ANSWER_BYTES
    from ..grading.session import GradingOptions

    _check_ranges(args)
    price = price_option(args)
    request = request_options(args)  # a malformed --judge-param or --judge-header, before anything opens
    decoding = decoding_flags(args)
    _check_panel(args)
    judges = tuple(args.judges or ())
    return GradingOptions(
        judge=None if len(judges) > 1 else args.judge,
        panel=judges if len(judges) > 1 else (),
        panel_rule=args.panel_rule,
        t1_audit=args.t1_audit or 0.0,
        repeat=args.repeat,
        replicas=tuple(getattr(args, "replicas", None) or ()),
        model=args.model,
        timeout=args.timeout,
        retries=args.retries,
        rate_limit_wait=args.rate_limit_wait,
        concurrency=args.concurrency,
        rpm=args.rpm,
        tpm=args.tpm,
        cache=None if args.no_cache else _cache_path(args.cache),
        max_answer_bytes=args.max_answer_bytes or MAX_ANSWER_BYTES,
        price=price,
        request=request,
        decoding=decoding,
    )


def _check_ranges(args: argparse.Namespace) -> None:
    """`UsageError` for a transport option out of range, naming the option."""
    if args.concurrency < 1:
        raise UsageError("--concurrency must be at least 1")
    if args.retries < 0:
        raise UsageError("--retries must be 0 or more")
    if not args.timeout > 0:
        raise UsageError("--timeout must be positive")
    if not args.rate_limit_wait >= 0:  # also refuses nan
        raise UsageError("--rate-limit-wait must be 0 or more")
    for name in ("rpm", "tpm"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise UsageError(f"--{name} must be positive")
    if args.max_answer_bytes is not None and args.max_answer_bytes < 1:
        raise UsageError("--max-answer-bytes must be at least 1")


def _check_panel(args: argparse.Namespace) -> None:
    """`UsageError` for a `--t1-audit`, `--repeat` or panel the grading cannot run."""
    from ..grading.repeats import MAX_REPEAT

    if args.t1_audit is not None and not 0 <= args.t1_audit <= 1:
        raise UsageError("--t1-audit must be a share from 0 to 1 (0.1 audits a tenth of the T1 passes)")
    if not 1 <= args.repeat <= MAX_REPEAT:
        raise UsageError(f"--repeat must be from 1 to {MAX_REPEAT}")
    judges = args.judges or []
    if len(set(judges)) < len(judges):
        raise UsageError("--judge names the same judge twice: each judge may sit on a panel once")


def _cache_path(flag: str | None) -> str:
    """The reply cache `--cache`, TABENCH_CACHE or the default names, through `outputs`' check."""
    from ..grading.cache import resolve_path
    from ..outputs import check_cache_out

    path = resolve_path(flag)
    check_cache_out(path)
    return str(path)


def notice_line(notice: str) -> str:
    """How a line a judge says during the run (`Judge.notice`) is shown on stderr."""
    return f"tabench: notice: {shown(notice, lines=True)}"

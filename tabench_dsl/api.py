"""The public Python API: a handful of verbs over the layers, re-exported by `tabench_dsl`.

    import tabench_dsl as tb

    battery = tb.load_battery("examples/lark-internals")       # raises SpecErrors, every problem
    problems = tb.lint_battery("examples/lark-internals")      # errors and warnings, never raises them
    compiled = tb.compile_battery(battery)                     # the exact prompts
    print(compiled.questions["parse-errors"].system)
    records = tb.grade(compiled, "examples/lark-internals/answers.jsonl", out="results.jsonl")
    # with a judge of your own: tb.grade(compiled, answers, tb.GradingOptions(judge="openai:gpt-4.1"))
    # go on with a grading, or grade a slice: tb.grade(compiled, answers, out=..., resume=True, limit=50)
    totals = tb.totals(tb.read_results("results.jsonl"))
    print(totals.systems[0].system, totals.systems[0].score)

Each verb is what the command of the same name does, without printing: `grade` is `tabench grade`
(T1, the judge, re-ask, stern retry, adjudicate, the reply cache, an append-only results file, and
what to grade: the slice, `--resume`, `--missing-as-fail`, decided by the same `grading.plan`) and
`totals` is `tabench totals` (the last record of each pair standing). The CLI is built on the same
layers; this module is the one place a script needs to import.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .core.compiled import CompiledBattery
from .core.errors import SpecError, UsageError
from .core.nodes import Battery
from .core.price import Price
from .core.records import Answer, Record
from .review.totals import Totals

if TYPE_CHECKING:
    from .grading.session import GradingOptions

__all__ = [
    "agrade",
    "compile_battery",
    "grade",
    "lint_battery",
    "load_battery",
    "read_results",
    "totals",
]


def load_battery(path: str | Path) -> Battery:
    """The battery at `path` (its folder or its battery.yaml), validated. Raises `SpecErrors` with
    every problem found, or `UsageError` when there is no battery there."""
    from .language.battery import load_battery as load

    return load(path)


def lint_battery(path: str | Path, *, ignore: Iterable[str] = ()) -> list[SpecError]:
    """Every problem of the battery at `path`, errors and warnings (`.severity`), in file order;
    warnings of a code the manifest's `lint: ignore` or `ignore` names (`W102`, ...) left out."""
    from .language.lint import lint_battery as lint

    return lint(path, ignore=ignore)


def compile_battery(battery: Battery | str | Path) -> CompiledBattery:
    """The exact, byte-stable judge prompts of `battery` (a loaded `Battery` or its path): each
    question's SYSTEM prompt in `.questions[id].system` (with its `.sha256`), the USER and STERN
    frames in `.user` / `.stern` (`.fill(answer)`)."""
    from .language.render import compile_battery as compile_

    if not isinstance(battery, Battery):
        battery = load_battery(battery)
    return compile_(battery)


def read_results(path: str | Path) -> Iterator[Record]:
    """The records of a results file, in file order (a line that is not a record is skipped)."""
    from .store.results import iter_records

    return iter_records(path)


def totals(records: Iterable[Record], *, price: Price | None = None) -> Totals:
    """The totals of `records`: per system and per question, the last record of each (system,
    question) pair standing; score = pass / (pass + fail + adjudicate) with a 95% Wilson interval;
    the judge calls' tokens and cost, at each record's judge price or at `price` when given."""
    from .review.totals import compute_totals

    return compute_totals(records, price=price)


def grade(
    battery: CompiledBattery | Battery | str | Path,
    answers: Iterable[Answer | Mapping[str, Any]] | str | Path,
    options: GradingOptions | None = None,
    *,
    out: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    resume: bool = False,
    questions: Collection[str] | None = None,
    systems: Collection[str] | None = None,
    tags: Collection[str] | None = None,
    limit: int | None = None,
    missing_as_fail: bool = False,
) -> list[Record]:
    """Grade `answers` against `battery` and return their records, in the order they finished.

    `answers` is an answers file (JSONL) or an iterable of `Answer`s or `{"system", "question",
    "answer"}` mappings; `options`, `out`, `env` and what to grade of the answers (`resume`,
    `questions`, `systems`, `tags`, `limit`, `missing_as_fail`) are those of `agrade`. Runs its own
    event loop: from inside one, await `agrade` instead."""
    from .grading.event_loop import run_event_loop

    return run_event_loop(
        lambda: agrade(
            battery,
            answers,
            options,
            out=out,
            env=env,
            resume=resume,
            questions=questions,
            systems=systems,
            tags=tags,
            limit=limit,
            missing_as_fail=missing_as_fail,
        )
    )


async def agrade(
    battery: CompiledBattery | Battery | str | Path,
    answers: Iterable[Answer | Mapping[str, Any]] | str | Path,
    options: GradingOptions | None = None,
    *,
    out: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    resume: bool = False,
    questions: Collection[str] | None = None,
    systems: Collection[str] | None = None,
    tags: Collection[str] | None = None,
    limit: int | None = None,
    missing_as_fail: bool = False,
) -> list[Record]:
    """`grade`, awaited. `options` say how to grade, as `tabench grade`'s flags do (default
    `GradingOptions()`: the judge `tabench grade` would choose, no reply cache): `judge` a judge
    name (`--judge`), or `panel` several, whose votes `panel_rule` combines; `t1_audit` the share
    of T1 passes also sent to the judge; `cache` a reply cache file; `price` the judges' price.
    `out` is a results file the records are appended to (created when missing; an existing one must
    be a results file); `env` where keys and base URLs are read (default: the process
    environment).

    What to grade of the answers is decided as `tabench grade` decides it (`grading.plan`):
    `questions`, `systems` and `tags` grade only the answers to those questions, of those systems,
    to the questions with one of those tags (`--question`, `--system`, `--tag`); `limit` grades at
    most that many (`--limit`); `resume` grades no answer whose pair already has a final record in
    `out` (`--resume`); `missing_as_fail` records `fail` for each question of the slice a system
    gave no answer to (`--missing-as-fail`). The records returned are those written: the graded
    answers' and the missing answers'."""
    from .grading.answer_slice import SliceFlags
    from .grading.plan import GradingPlan, PlanOptions
    from .grading.session import GradingOptions, open_grader
    from .outputs import check_results_out
    from .store.results import ResultsWriter

    compiled = battery if isinstance(battery, CompiledBattery) else compile_battery(battery)
    options = GradingOptions() if options is None else options
    if not 0.0 <= options.t1_audit <= 1.0:
        raise UsageError("t1_audit must be a share from 0 to 1")
    if out is not None:
        check_results_out(out, option="out")
    chosen = SliceFlags(questions=_names(questions), tags=_names(tags), systems=_names(systems), limit=limit)
    plan_options = PlanOptions(slice=chosen, resume=resume, missing_as_fail=missing_as_fail)
    plan = GradingPlan(
        compiled,
        None if out is None else Path(out),
        plan_options,
        answers=answers if isinstance(answers, str | Path) else None,
    )
    read = plan.reader(answers) if isinstance(answers, str | Path) else _answers(answers, compiled)
    records: list[Record] = []
    with ResultsWriter(out) if out is not None else _NoFile() as writer:
        async with open_grader(compiled, options, writer=writer, on_record=records.append, env=env) as grader:
            await grader.run(plan.answers(read))
        plan.finish(writer, records.append)
    return records


def _names(names: Collection[str] | None) -> tuple[str, ...] | None:
    """A slice filter as `SliceFlags` holds it: None (or nothing) filters nothing."""
    if isinstance(names, str):
        raise UsageError(f"a slice filter is a collection of names, not the string {names!r}")
    return tuple(names) if names else None


class _NoFile:
    """Where records go when `grade` is given no results file: nowhere (they are returned)."""

    count = 0

    def write(self, record: Record) -> None:
        self.count += 1

    def close(self) -> None:
        pass

    def __enter__(self) -> _NoFile:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _answers(answers: Iterable[Answer | Mapping[str, Any]], compiled: CompiledBattery) -> list[Answer]:
    """The given answers, each checked to name a question of the battery."""
    items: list[Answer] = []
    for item in answers:
        answer = item if isinstance(item, Answer) else Answer(**dict(item))
        if answer.question not in compiled.questions:
            raise UsageError(
                f"an answer of {answer.system!r} names no question of the battery: {answer.question!r}"
            )
        items.append(answer)
    return items

"""The held-out re-check of `tabench align`: the held-out decided answers graded with the same judge
against the battery as it is and as patched, and measured against the people's verdicts.

Each held-out answer is graded as `calibrate --labels` grades a labelled answer (system
`exemplar.<n>.label`, through T1 and the judge, the reply cache keyed as usual: a second run costs
nothing on the side whose prompt did not change). Agreement is the share of answers whose graded
verdict is the person's (adjudicate and error never are), with its 95% Wilson interval; Cohen's
kappa is over the labels pass, fail, adjudicate and error, as calibrate computes it.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ..core.display import shown
from ..review.audit import Proportion, proportion

if TYPE_CHECKING:
    from ..core.compiled import CompiledBattery
    from ..core.nodes import Battery
    from ..grading.calibrate import Calibration, Case
    from ..grading.session import GradingOptions
    from ..language.align import NewExemplar, RubricPatch
    from ..review.align_cases import DecidedAnswer


class SideFigures(msgspec.Struct):
    """The judge against the people on the held-out answers, for one side (before or after)."""

    n: int
    agreement: Proportion
    kappa: float | None


class Breaking(msgspec.Struct):
    """`tabench breaking`'s verdict on the patch: does it leave old results comparable."""

    breaking: bool
    summary: str
    questions: list[str]


class AlignSummary(msgspec.Struct):
    """What `align --json` prints."""

    n_decided: int
    n_disagreements: int
    n_train: int
    n_holdout: int
    proposed: int
    placed: int
    before: SideFigures | None
    after: SideFigures | None
    breaking: Breaking
    exemplars: list[dict[str, object]]
    left_out: list[dict[str, str]]
    #: The unified diff of the rubric files, as `--out` gets it.
    patch: str = ""


def held_out_cases(held_out: Sequence[DecidedAnswer], battery: Battery) -> list[Case]:
    """The held-out answers to questions the battery has, as calibrate's labelled cases."""
    from ..grading.calibrate import labelled_case

    counts: dict[str, int] = {}
    found = []
    for answer in held_out:
        if battery.question(answer.question) is None:
            continue
        counts[answer.question] = counts.get(answer.question, 0) + 1
        who = f"{'audit' if answer.audit else 'decision'} by {answer.reviewer}"
        found.append(
            labelled_case(answer.question, counts[answer.question], answer.answer, answer.person_verdict, who)
        )
    return found


def recheck(
    args: argparse.Namespace, battery: Battery, patched: Battery, held_out: Sequence[DecidedAnswer]
) -> tuple[SideFigures | None, SideFigures | None]:
    """Grade the held-out answers before and after; (None, None) when none is held out."""
    from ..grading.event_loop import run_event_loop
    from ..language.render import compile_battery
    from .grading_flags import grading_options

    cases = held_out_cases(held_out, battery)
    if not cases:
        return None, None
    options = grading_options(args)
    sides = []
    with tempfile.TemporaryDirectory(prefix="tabench-align-") as folder:
        for name, side in (("before", battery), ("after", patched)):
            out = Path(folder) / f"{name}.jsonl"
            result = run_event_loop(functools.partial(_grade, options, compile_battery(side), out, cases))
            sides.append(_figures(result))
    return sides[0], sides[1]


async def _grade(
    options: GradingOptions, compiled: CompiledBattery, out: Path, cases: list[Case]
) -> Calibration:
    from ..grading.calibrate import calibrate
    from ..grading.session import open_grader
    from .grading_flags import notice_line

    def show(notice: str) -> None:
        print(notice_line(notice), file=sys.stderr)

    async with open_grader(compiled, options, on_notice=show) as grader:
        return await calibrate(compiled, grader, out=out, labelled=cases)


def _figures(result: Calibration) -> SideFigures:
    return SideFigures(result.n, proportion(result.agree, result.n), result.kappa)


def breaking_verdict(battery: Battery, patched: Battery) -> Breaking:
    """`tabench breaking`'s verdict on the battery before and after the patch."""
    from ..language.breaking import breaks, compare, side_of
    from ..language.render import compile_battery
    from .breaking_cmd import summary_line

    changes = compare(side_of(battery, compile_battery(battery)), side_of(patched, compile_battery(patched)))
    broken = breaks(changes)
    changed = sorted({c.new_id or c.old_id or "" for c in changes if c.kind != "cosmetic"})
    return Breaking(broken, summary_line(changes, broken), changed)


def dry_run_lines(
    args: argparse.Namespace,
    battery: Battery,
    patched: Battery,
    held_out: Sequence[DecidedAnswer],
    breaking: Breaking,
) -> list[str]:
    """What the re-check would ask the judge, per side, counted offline (`grading.estimate`)."""
    from ..core.records import Answer
    from ..grading.estimate import estimate_grading
    from ..language.render import compile_battery
    from .dry_run import planned_judges
    from .grading_flags import grading_options

    cases = held_out_cases(held_out, battery)
    options = grading_options(args)
    answers = [Answer(case.system, case.question, case.answer) for case in cases]
    lines = [f"dry run: the re-check would grade {len(cases)} held-out answer(s) twice"]
    for name, side in (("before", battery), ("after", patched)):
        compiled = compile_battery(side)
        found = estimate_grading(
            compiled, answers, planned_judges(compiled, options), cache=options.cache, repeat=options.repeat
        )
        lines.append(
            f"  {name}: {found.t1_passes} T1 pass(es), {found.total('judge_calls')} judge call(s) to send, "
            f"{found.total('cache_hits')} from the reply cache (re-asks and stern retries not counted)"
        )
    lines.append(_breaking_line(breaking))
    return lines


def summary(
    decided: Sequence[DecidedAnswer],
    training: Sequence[DecidedAnswer],
    held_out: Sequence[DecidedAnswer],
    proposed: Sequence[NewExemplar],
    patch: RubricPatch,
    before: SideFigures | None,
    after: SideFigures | None,
    breaking: Breaking,
) -> AlignSummary:
    """Every figure `align` reports, as `--json` prints it."""
    from ..language.align import unified_patch

    exemplars: list[dict[str, object]] = [
        {
            "question": p.exemplar.question,
            "kind": p.exemplar.kind,
            "answer": p.exemplar.answer,
            "why": p.exemplar.why,
            "system": p.exemplar.system,
            "reviewer": p.exemplar.reviewer,
            "path": p.path,
            "line": p.line,
            "w104": p.t1_passes,
        }
        for p in patch.placed
    ]
    left_out = [
        {"question": left.exemplar.question, "system": left.exemplar.system, "reason": left.reason}
        for left in patch.left_out
    ]
    return AlignSummary(
        n_decided=len(decided),
        n_disagreements=sum(answer.disagrees for answer in decided),
        n_train=len(training),
        n_holdout=len(held_out),
        proposed=len(proposed),
        placed=len(patch.placed),
        before=before,
        after=after,
        breaking=breaking,
        exemplars=exemplars,
        left_out=left_out,
        patch=unified_patch(patch),
    )


def report_lines(document: AlignSummary, *, applied: bool) -> list[str]:
    """The human report: the split, the proposal, the before/after table, the breaking verdict."""
    from ..review.audit_view import share_text

    lines = [
        f"{document.n_decided} decided answer(s), {document.n_disagreements} overturning the tool; "
        f"training {document.n_train}, held out {document.n_holdout}",
        f"{document.proposed} exemplar(s) proposed from training disagreements, {document.placed} placed"
        + (" and written" if applied and document.placed else " (nothing written without --apply)"),
    ]
    if document.before is None or document.after is None:
        lines.append("no held-out answer: nothing to re-check (raise --holdout, or decide more answers)")
    else:
        lines.append(f"{'held-out re-check':<18} {'n':>4}  {'agreement (95% Wilson)':<24} kappa")
        for name, side in (("before", document.before), ("after", document.after)):
            kappa = "-" if side.kappa is None else f"{side.kappa:.3f}"
            lines.append(f"{name:<18} {side.n:>4}  {share_text(side.agreement):<24} {kappa}")
    lines.append(_breaking_line(document.breaking))
    return lines


def _breaking_line(breaking: Breaking) -> str:
    if not breaking.breaking:
        return f"tabench breaking: {breaking.summary}"
    named = ", ".join(shown(q) for q in breaking.questions[:5]) + (
        ", ..." if len(breaking.questions) > 5 else ""
    )
    return (
        f"tabench breaking: {breaking.summary}: the patched battery is a new battery; its compiled prompt "
        f"changes for {named}, so regrade before comparing scores"
    )

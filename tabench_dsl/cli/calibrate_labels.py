"""`tabench calibrate BATTERY --labels RESULTS`: the people's verdicts of an earlier grading as the
answer key a judge is measured on.

Every standing record of RESULTS that a person decided, a blind audit (`"kind": "audit"`) or a
settled `adjudicate`, becomes a case: its answer is graded again by the judge calibrate is given,
and expected to get the person's verdict. The battery names the questions; a labelled answer to a
question it does not have is left out, and one graded under a prompt that is no longer the
battery's is counted (the person judged the same answer, but against what the prompt said then).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import UsageError

if TYPE_CHECKING:
    from ..core.compiled import CompiledBattery
    from ..grading.calibrate import Case


class LabelProblems:
    """What reading the labels met: bad lines, unknown questions, prompts that changed since."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.unknown_questions = 0
        self.prompt_changed = 0

    def messages(self) -> list[str]:
        """One warning per kind of problem met."""
        found = [f"{line} (skipped)" for line in self.lines]
        if self.unknown_questions:
            found.append(
                f"{self.unknown_questions} labelled answer(s) to questions the battery lacks (left out)"
            )
        if self.prompt_changed:
            found.append(
                f"{self.prompt_changed} labelled answer(s) were graded under a prompt the battery no "
                "longer has (sha256 differs): the labels are kept"
            )
        return found


def labelled_cases(results: Path, compiled: CompiledBattery, problems: LabelProblems) -> list[Case]:
    """The people's verdicts on the standing records of `results` as calibration cases."""
    from ..grading.calibrate import labelled_case
    from ..review.decisions import apply_decisions
    from ..review.outcomes import latest
    from ..store.decisions import decisions_path, load_decisions
    from ..store.results import iter_records

    if not results.is_file():
        raise UsageError(f"{results}: no such results file (--labels)")
    records = list(iter_records(results, on_problem=problems.lines.append))
    standing = latest(apply_decisions(records, load_decisions(decisions_path(results)))).values()
    counts: dict[str, int] = {}
    found = []
    for record in standing:
        human = record.audited_by_human or record.decision
        if human is None:
            continue
        question = compiled.questions.get(record.question)
        if question is None:
            problems.unknown_questions += 1
            continue
        problems.prompt_changed += question.sha256 != record.prompt_sha256
        counts[record.question] = counts.get(record.question, 0) + 1
        who = f"{'audit' if human.is_audit else 'decision'} by {human.reviewer}" + (
            f": {human.note}" if human.note else ""
        )
        found.append(
            labelled_case(record.question, counts[record.question], record.answer, human.verdict, who)
        )
    if not found:
        raise UsageError(f"{results}: no answer a person decided or audited (--labels needs some)")
    return found

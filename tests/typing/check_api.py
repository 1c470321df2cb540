"""The public API as a script uses it, type-checked by mypy (pyproject's `files`), never run.

A signature change that breaks a user's script fails CI here before a user sees it. The lines
marked `type: ignore[...]` must stay errors: mypy runs with `warn_unused_ignores`, so a call that
starts to type-check (an option back as a loose keyword, say) fails too.
"""

from __future__ import annotations

import tabench_dsl as tb


def load_compile_grade_total() -> float | None:
    battery: tb.Battery = tb.load_battery("examples/lark-internals")
    compiled: tb.CompiledBattery = tb.compile_battery(battery)
    prompt: str = compiled.questions["parse-errors"].system
    answers = [tb.Answer(system="s", question="parse-errors", answer=prompt[:10])]
    options = tb.GradingOptions(judge="builtin", concurrency=4, price=tb.Price(input=0.4, output=1.6))
    records: list[tb.Record] = tb.grade(compiled, answers, options, out="results.jsonl")
    totals: tb.Totals = tb.totals(tb.read_results("results.jsonl"))
    assert records[0].verdict in ("pass", "fail", "adjudicate", "error")
    return totals.systems[0].score


async def grade_inside_a_loop(compiled: tb.CompiledBattery) -> int:
    records = await tb.agrade(compiled, "answers.jsonl", tb.GradingOptions(panel=("a", "b")), env={})
    return len(records)


def errors_a_script_catches() -> list[str]:
    try:
        tb.load_battery("nowhere")
    except tb.SpecErrors as problems:
        return [error.render() for error in problems.errors]
    except tb.UsageError as error:
        return [str(error)]
    return []


def calls_that_must_not_type_check(compiled: tb.CompiledBattery) -> None:
    tb.grade(compiled, [], judge="builtin")  # type: ignore[call-arg]
    tb.GradingOptions(judge=3)  # type: ignore[arg-type]
    tb.totals(compiled)  # type: ignore[arg-type]

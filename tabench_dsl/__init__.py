"""tabench: compile LLM-judge batteries to exact prompts, and grade answers against gold keys.

The public API is a handful of verbs (`api`): `load_battery`, `lint_battery`, `compile_battery`,
`grade` (and `agrade`), `read_results`, `totals`. Everything else is reached through them.

The layers (docs/architecture.md), imports flowing downwards only:

    cli, api       the commands and the Python verbs
    grading        answers --T1--> judges --verdict--> runner --> results JSONL
    review         results --> totals, decisions, report, viewer
    spec           spec files --parse--> nodes --battery--> Battery --render--> CompiledBattery
    core           the shared types: errors, nodes, compiled battery, records, results file
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import agrade, compile_battery, grade, lint_battery, load_battery, read_results, totals

from .core.version import __version__

__all__ = [
    "__version__",
    "agrade",
    "compile_battery",
    "grade",
    "lint_battery",
    "load_battery",
    "read_results",
    "totals",
]


def __getattr__(name: str) -> Any:
    # The verbs are imported on first use: `tabench compile` imports this package first and must
    # not pay for the grading and review layers it never uses.
    if name in __all__ and name != "__version__":
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'tabench_dsl' has no attribute {name!r}")

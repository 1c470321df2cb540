"""tabench: compile LLM-judge batteries to exact prompts, and grade answers against gold keys.

The public API (`api`) is a handful of verbs and the types they take and give:

    verbs     load_battery, lint_battery, compile_battery, grade / agrade, read_results, totals
    types     Battery (loaded), CompiledBattery (the exact prompts), Answer, Record, Totals,
              GradingOptions (how `grade` grades), Price
    errors    TabenchError > SpecError / SpecErrors (file, line, column) / UsageError /
              JudgeError > TransportError

How the package is built, layer by layer, is in docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .core.version import __version__

if TYPE_CHECKING:
    from .api import agrade, compile_battery, grade, lint_battery, load_battery, read_results, totals
    from .core.compiled import CompiledBattery
    from .core.errors import JudgeError, SpecError, SpecErrors, TabenchError, TransportError, UsageError
    from .core.nodes import Battery
    from .core.price import Price
    from .core.records import Answer, Record
    from .grading.session import GradingOptions
    from .review.totals import Totals

#: Where each public name lives; imported on first use, so that `tabench compile` (which imports
#: this package first) does not pay for the grading and review layers it never uses.
_HOMES = {
    "agrade": "api",
    "compile_battery": "api",
    "grade": "api",
    "lint_battery": "api",
    "load_battery": "api",
    "read_results": "api",
    "totals": "api",
    "Answer": "core.records",
    "Battery": "core.nodes",
    "CompiledBattery": "core.compiled",
    "GradingOptions": "grading.session",
    "JudgeError": "core.errors",
    "Price": "core.price",
    "Record": "core.records",
    "SpecError": "core.errors",
    "SpecErrors": "core.errors",
    "TabenchError": "core.errors",
    "Totals": "review.totals",
    "TransportError": "core.errors",
    "UsageError": "core.errors",
}

__all__ = [
    "Answer",
    "Battery",
    "CompiledBattery",
    "GradingOptions",
    "JudgeError",
    "Price",
    "Record",
    "SpecError",
    "SpecErrors",
    "TabenchError",
    "Totals",
    "TransportError",
    "UsageError",
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
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tabench_dsl' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{home}", __name__), name)

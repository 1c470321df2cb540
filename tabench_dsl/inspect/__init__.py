"""A tabench battery as an Inspect AI scorer: `battery_scorer("path/to/battery", judge=...)`.

    from inspect_ai import Task
    from tabench_dsl.inspect import battery_scorer

    Task(dataset=..., solver=generate(), scorer=battery_scorer("my-battery", judge="openai", model="gpt-x"))

or, to re-score an existing log (the package registers the scorer with Inspect by its entry point):

    inspect score LOG.eval --scorer tabench_dsl/battery_scorer -S battery=my-battery -S judge=openai

The layer on top of the others, beside `cli` and `api`: the one package that imports `inspect_ai`
by name (grading reads Inspect logs through `core.extras.require`). Importing it without the
`inspect` extra is a usage error naming the extra.
"""

from __future__ import annotations

from ..core.extras import require

require("inspect_ai", extra="inspect", purpose="tabench_dsl.inspect (a battery as an Inspect scorer)")

from .scorer import battery_scorer  # noqa: E402 - after the check, which names the missing extra

__all__ = ["battery_scorer"]

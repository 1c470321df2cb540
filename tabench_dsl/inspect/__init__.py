"""A tabench battery as an Inspect AI scorer: `battery_scorer("path/to/battery", judge=...)`.

How to use it: docs/integrations.md; how it fits: docs/architecture.md.
"""

from __future__ import annotations

from ..core.extras import require

require("inspect_ai", extra="inspect", purpose="tabench_dsl.inspect (a battery as an Inspect scorer)")

from .scorer import battery_scorer  # noqa: E402 - after the check, which names the missing extra

__all__ = ["battery_scorer"]

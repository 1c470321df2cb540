"""tabench: compile LLM-judge batteries to exact prompts, and grade answers against gold keys.

The pipeline, one module per stage:

    spec files --parse--> nodes --battery--> Battery --render--> prompts (compile)
    answers --tiers (T1)--> judges (T2) --verdict--> runner --> results JSONL --totals--> tables

The pure core (nodes, parse, battery, render, tiers, verdict) never touches the network; the
runtime (judges, runner, cache, results, totals) never imports Lark or Jinja2; only `cli` prints.
"""

from __future__ import annotations

__version__ = "0.1.0"

"""The bottom layer: the data every other layer shares, and helpers with no dependency above them.

Errors (`errors`), the battery's AST (`nodes`), a compiled battery (`compiled`), records and
decisions (`records`), the results file (`results`), the token-subset tier (`tiers`), the
reasoning blocks cut from an answer before grading (`reasoning`), key scrubbing (`redact`), showing
untrusted text (`display`), where the grammar and scorers live (`resources`) and how a command is
interrupted (`interrupts`). Nothing here imports lark, yaml,
jinja2 or aiohttp, nor any other layer of tabench.
"""

"""The results viewer: a local web app over one results file (`tabench view`).

run.py      read a results file once: standing records, decisions applied, prompts compiled
queries.py  the in-memory index: filter, page, detail, decide
charts.py   pass / fail / adjudicate / error bars: what they show and where (shared with the report)
app.py      the aiohttp app and JSON API, bound to 127.0.0.1
page.py     the single page, rendered from review/templates/viewer.* with its constants
"""

from __future__ import annotations

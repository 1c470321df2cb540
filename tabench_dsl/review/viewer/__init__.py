"""The results viewer: a local web app over one results file (`tabench view`).

    run.py      read a results file once: standing records, decisions applied, prompts compiled
    queries.py  the in-memory index: filter, page, detail, decide
    charts.py   pass / fail / adjudicate / error bars as inline SVG (shared with the static report)
    app.py      the aiohttp app and JSON API, bound to 127.0.0.1
    page.*      the single page: HTML, CSS and vanilla JS, inlined at import
"""

from __future__ import annotations

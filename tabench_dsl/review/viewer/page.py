"""The viewer's one page, assembled once from page.html, page.css and page.js beside this module.

The files are package data (no build step, nothing fetched from a network); the CSS and the script
are inlined so the page is a single response.
"""

from __future__ import annotations

import base64
import hashlib
from importlib.resources import files


def _read(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def build_page() -> str:
    """page.html with page.css and page.js inlined in place of its two markers."""
    html = _read("page.html")
    css, js = _read("page.css"), _read("page.js")
    if "</script" in js.lower() or "</style" in css.lower():
        raise RuntimeError("page assets must not close their own inline element")
    return html.replace("/*CSS*/", css, 1).replace("/*JS*/", js, 1)


def content_security_policy() -> str:
    """A policy that runs only the page's own inline script and style (by hash) and loads nothing."""
    css, js = _read("page.css"), _read("page.js")
    return (f"default-src 'none'; script-src {_hash(js)}; style-src {_hash(css)}; img-src data:; "
            "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


#: The page as served.
PAGE_HTML = build_page()
#: Its Content-Security-Policy header.
PAGE_CSP = content_security_policy()

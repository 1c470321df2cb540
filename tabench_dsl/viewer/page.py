"""The viewer's one page, assembled once from page.html, page.css and page.js beside this module.

The files are package data (no build step, nothing fetched from a network); the CSS and the script
are inlined so the page is a single response.
"""

from __future__ import annotations

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


#: The page as served.
PAGE_HTML = build_page()

"""The review pages' templates: one sandboxed, autoescaping Jinja2 environment for the report and
the viewer, over the template files in review/templates/ (package data, shipped in the wheel).

Every value a template prints passes two steps, in this order, without the template asking:

1. `display.shown` (the environment's `finalize`): a control or bidi character in a name, an answer
   or a judge's reply is printed as a visible escape, never as itself. Two filters choose otherwise:
   `|lines` keeps the line breaks and tabs of multi-line text (an answer, a reason, a reply, a
   prompt); `|as_is` keeps the text exactly, for attribute values a script compares with the data
   (a filter's option value, `data-system`).
2. autoescape: `<`, `>`, `&`, `"` and `'` become entities, so no text is ever read as markup.

Only values that are already markup skip both: the page's own style and script (`Inline`), the
`Markup` of `REPORT_MARKER`, and JSON printed with `|tojson` (which escapes `<`, `>`, `&` and `'`
itself). So a template prints data one value at a time: a filter that builds markup from several
values (`|join` or `|format` on markup) would skip step 1, and its result is not shown first.

The templates are tabench's own; the sandbox (immutable: no method that changes a list, a dict or
a set, no attribute starting with `_`) still keeps a template from reaching beyond the values it is
given, or changing them.

`Inline` holds a page's own style or script together with the Content-Security-Policy source that
allows exactly that text: the hash is computed here, once, from the very string the page carries.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib.resources import files
from typing import Any

import msgspec
from jinja2 import PackageLoader, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from ..core.display import shown
from .compare import p_text, signed_points
from .costs import format_usd
from .outcomes import percent


class _Lines(str):
    """Multi-line text already shown with its line breaks kept (`|lines`): finalize leaves it."""

    __slots__ = ()  # a string and nothing more: no per-instance dict


class _AsIs(str):
    """Text printed exactly as it is, still escaped (`|as_is`): finalize leaves it."""

    __slots__ = ()


def _lines(text: str) -> _Lines:
    return _Lines(shown(str(text), lines=True))


def _as_is(text: str) -> _AsIs:
    return _AsIs(text)


def _shown_unless_marked(value: Any) -> Any:
    """The environment's `finalize`: every printed value is shown as text unless a filter said how."""
    if type(value) is str:  # the common case first: plain text from a record or a battery
        return shown(value)
    if isinstance(value, (_Lines, _AsIs, int, float)) or hasattr(value, "__html__"):
        return value  # marked by a filter, a number (bool is an int too), or markup of our own
    return shown(str(value))


def _count(value: int) -> str:
    """A count with thousands separators: `12,345`."""
    return f"{value:,}"


def _usd(value: float | None) -> str:
    """A cost as every output shows it (`costs.format_usd`), a dash when unknown."""
    return format_usd(value, missing="–")


def _percent(value: float | None) -> str:
    """A share as `87.5%`, or an en dash when there is none."""
    return percent(value, missing="–")


def _preview(text: str, limit: int = 110) -> str:
    """The first `limit` characters of `text` on one line, whitespace runs as single spaces."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _ReviewSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, with a shortcut that decides exactly as it does, only faster.

    For an instance of a msgspec Struct (a record, an attempt, a totals row, a laid-out chart), the
    sandbox allows every attribute whose name does not start with `_`: a Struct is not a function,
    a type, a frame or one of the mutable builtins it guards, and its only extra check concerns a
    `str.format` method. So a public attribute whose value is not callable is returned here
    directly; anything else (a method, a `_` name, any other object) takes the checked path. The
    checks cost several microseconds per read, and a report of 20,000 answers reads some 300,000
    attributes of records: through the checks, they took most of the time the page took.
    """

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, msgspec.Struct) and attribute[:1] != "_":
            value = getattr(obj, attribute, _MISSING)
            if value is not _MISSING and not callable(value):
                return value
        return super().getattr(obj, attribute)


_MISSING = object()


@cache
def environment() -> ImmutableSandboxedEnvironment:
    """The environment every review page renders in (built once per process)."""
    env = _ReviewSandbox(
        loader=PackageLoader(__package__, "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        finalize=_shown_unless_marked,
        # Block tags on lines of their own leave no blank line and no indent behind, so the
        # templates can be laid out for a reader and the pages stay compact.
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # compiled once per process, never stat()ed again
    )
    env.filters.update(lines=_lines, as_is=_as_is, count=_count, percent=_percent, preview=_preview, usd=_usd)
    env.filters.update(points=signed_points, pvalue=p_text)  # pairwise comparisons (review/compare.py)
    return env


def render(name: str, **values: Any) -> str:
    """Template `name` of review/templates/ rendered with `values`."""
    # Every printed value comes out as a `Markup`, which the garbage collector tracks. Joined as
    # `Template.render` does, a large report keeps some 400,000 of them alive until the end, and
    # the collector scans them and every record again and again (twice the time of the f-strings
    # this replaced). Copied to plain strings as they come, each one is freed at once.
    return "".join(map(str, environment().get_template(name).generate(**values)))


def csp_source(text: str) -> str:
    """The Content-Security-Policy source that allows exactly this inline text: `'sha256-...'`."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


class Inline(msgspec.Struct, frozen=True):
    """A page's own style or script, inlined in the page; printed by a template as it is.

    `source` is what the page's Content-Security-Policy lists for it, computed from `text`, so the
    policy always allows the text the page carries and nothing else.
    """

    text: str

    @property
    def source(self) -> str:
        return csp_source(self.text)

    def __html__(self) -> str:
        return self.text


def inline(name: str, **values: Any) -> Inline:
    """A style sheet or a script of review/templates/ for inlining in a page: a `.j2` file rendered
    with `values`, any other file as it is (a script is read, never parsed as a template, so its
    braces mean nothing to Jinja).

    Raises `RuntimeError` if the text would close its own `<style>` or `<script>` element: the page
    would then read the rest as markup.
    """
    if name.endswith(".j2"):
        text = render(name, **values)
    else:
        text = files(__package__).joinpath("templates", name).read_text(encoding="utf-8")
    lowered = text.lower()
    if "</script" in lowered or "</style" in lowered:
        raise RuntimeError(f"{name} must not close its own inline element")
    return Inline(text)


def markup(text: str) -> Markup:
    """Text of tabench's own that is markup (a `<meta>` tag), printed by a template as it is."""
    return Markup(text)

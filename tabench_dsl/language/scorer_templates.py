"""Scorer templates, loaded and rendered as data: Jinja2's immutable sandbox, one scorer folder.

A scorer comes with a battery someone else wrote, so its templates must not reach Python's
internals (`cycler.__init__.__globals__.os`) or change the values they are given. They render in
`ImmutableSandboxedEnvironment`; a template that names an attribute the sandbox would refuse is
refused as it is compiled (a `SpecError` at its line and column, before anything renders); one that
reaches it by a computed name fails in the sandbox, and `render_template` reports that, and any
other exception a template raises, at the template line, never as a traceback. Templates are read
from their scorer's folder only (symlinks followed must stay inside), as `files` reads any
spec file. Each scorer folder gets one environment (`StrictUndefined`, no autoescaping, the
template's own last line break dropped) whose compiled templates are cached for the process.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import jinja2.nodes
from jinja2.exceptions import SecurityError
from jinja2.loaders import split_template_path
from jinja2.sandbox import (
    UNSAFE_ASYNC_GENERATOR_ATTRIBUTES,
    UNSAFE_COROUTINE_ATTRIBUTES,
    UNSAFE_GENERATOR_ATTRIBUTES,
    ImmutableSandboxedEnvironment,
)

from ..core.errors import SpecError, UsageError
from ..core.nodes import Pos
from .files import Refused, is_inside, read_spec_text
from .template_limits import (
    LIMIT_GLOBALS,
    MAX_BUILT,
    MAX_OUTPUT,
    MAX_STEPS,
    TemplateLimit,
    binop,
    check_number,
    limit_tree,
    render_budget,
    step,
)


class TemplateError(UsageError):
    """A scorer template is missing or uses a value it is not given (exit status 2, like a bad spec).

    A template that does not compile is a `SpecError` at its file and line.
    """


#: Attributes the sandbox refuses on the objects that have them, beside every name starting with "_".
INTERNAL_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "mro",
        *UNSAFE_GENERATOR_ATTRIBUTES,
        *UNSAFE_COROUTINE_ATTRIBUTES,
        *UNSAFE_ASYNC_GENERATOR_ATTRIBUTES,
    }
)

#: The hint of an unsafe template.
HINT_UNSAFE = (
    "scorer templates render in a sandbox: they use the values they are given, never an attribute "
    "that starts with '_' or reaches Python's internals"
)


class _ScorerLoader(jinja2.BaseLoader):
    """A scorer's templates, read from its own folder only: a name with `..` is not found, a
    template whose real path (symlinks followed) leaves the folder is refused, and the file is
    read as `files` reads every spec file (regular, bounded, UTF-8, byte order mark dropped)."""

    def __init__(self, folder: str) -> None:
        self.folder = os.path.realpath(folder)

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        path = os.path.join(self.folder, *split_template_path(template))
        if not os.path.lexists(path):
            raise jinja2.TemplateNotFound(template)
        if not is_inside(path, (Path(self.folder),)):
            raise TemplateError(f"scorer template {path} is outside the scorer folder")
        try:
            source = read_spec_text(path, "scorer template")
        except Refused as exc:
            raise TemplateError(f"scorer template {path} {exc.reason}") from None
        except FileNotFoundError:
            raise jinja2.TemplateNotFound(template) from None
        return source, path, lambda: True  # auto_reload is off: never asked


#: The hint of a template over a limit.
HINT_LIMITS = (
    f"scorer templates may build values of at most {MAX_BUILT:,} characters or items, take at most "
    f"{MAX_STEPS:,} steps and render at most {MAX_OUTPUT:,} characters"
)


class _ScorerEnvironment(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox that also refuses, as it compiles a template, any attribute the
    sandbox would refuse when rendering it: the error comes before anything renders, at its line.
    What a template builds and how long it runs are bounded too (`template_limits`)."""

    intercepted_binops = frozenset({"*", "+", "**"})

    def compile(self, source, name=None, filename=None, raw=False, defer_init=False):
        if isinstance(source, str):
            tree = self.parse(source, name, filename)
            _refuse_unsafe(tree, source, filename or name or "<template>")
            source = limit_tree(tree, self)
        return super().compile(source, name, filename, raw, defer_init)

    def call_binop(self, context, operator, left, right):
        return binop(operator, left, right)

    def call(__self, __context, __obj, *args, **kwargs):
        step()
        for value in (*args, *kwargs.values()):
            check_number(value, "a call")
        return super().call(__context, __obj, *args, **kwargs)

    def getattr(self, obj, attribute):
        step()
        return super().getattr(obj, attribute)

    def getitem(self, obj, argument):
        step()
        return super().getitem(obj, argument)


def _unsafe_attributes(tree: jinja2.nodes.Template) -> Iterator[tuple[str, int]]:
    """(attribute, line) of every attribute the template names that the sandbox would refuse:
    `x.attr`, `x["attr"]` and `x|attr("attr")` with a written name."""
    for node in tree.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem, jinja2.nodes.Filter)):
        name: object = None
        if isinstance(node, jinja2.nodes.Getattr):
            name = node.attr
        elif isinstance(node, jinja2.nodes.Getitem):
            name = node.arg.value if isinstance(node.arg, jinja2.nodes.Const) else None
        elif isinstance(node, jinja2.nodes.Filter) and node.name == "attr" and node.args:
            first = node.args[0]
            name = first.value if isinstance(first, jinja2.nodes.Const) else None
        if isinstance(name, str) and (name.startswith("_") or name in INTERNAL_ATTRIBUTES):
            yield name, node.lineno


def _refuse_unsafe(tree: jinja2.nodes.Template, source: str, path: str) -> None:
    """Raise a SpecError at the first attribute (by line and column) the sandbox would refuse."""
    lines = source.split("\n")
    found = []
    for name, line in _unsafe_attributes(tree):
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        found.append((line, _column(text, name), name, text))
    if not found:
        return
    line, col, name, text = min(found)
    raise SpecError(
        f"unsafe template: attribute '{name}' is not available to templates",
        path=path,
        line=line,
        col=col,
        source_line=text,
        hint=HINT_UNSAFE,
    )


def _column(text: str, name: str) -> int:
    """The column of attribute `name` in the line `text`: after its dot, inside its quotes, else 1."""
    for needle in (f".{name}", f"'{name}'", f'"{name}"'):
        at = text.find(needle)
        if at >= 0:
            return at + 2
    at = text.find(name)
    return at + 1 if at >= 0 else 1


@cache
def scorer_environment(scorer_path: str) -> jinja2.Environment:
    # auto_reload=False: a template is compiled once per process and never stat()ed again.
    environment = _ScorerEnvironment(
        loader=_ScorerLoader(scorer_path),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        auto_reload=False,
    )
    environment.globals.update(LIMIT_GLOBALS)
    return environment


@cache
def load_template(scorer_path: str, name: str) -> jinja2.Template:
    try:
        return scorer_environment(scorer_path).get_template(name)
    except jinja2.TemplateNotFound as exc:
        raise TemplateError(f"scorer template not found: {Path(scorer_path) / name}") from exc
    except jinja2.TemplateSyntaxError as exc:
        raise SpecError(
            f"scorer template: {exc.message}",
            path=exc.filename or Path(scorer_path) / name,
            line=exc.lineno,
            col=1,
        ) from None


def render_template(template: jinja2.Template, values: dict[str, Any]) -> str:
    try:
        with render_budget():
            return _bounded_render(template, values)
    except TemplateLimit as exc:
        raise _failure(template, exc, f"template over a limit: {exc}", hint=HINT_LIMITS) from None
    except SecurityError as exc:
        raise _failure(template, exc, "unsafe template: " + str(exc).rstrip("."), hint=HINT_UNSAFE) from None
    except jinja2.UndefinedError as exc:
        raise TemplateError(f"{template.filename}: {exc.message}") from exc
    except (SpecError, TemplateError):
        raise
    except Exception as exc:  # whatever a template written by someone else can raise: never a traceback
        raise _failure(template, exc, f"template failed: {type(exc).__name__}: {exc}") from None


def _bounded_render(template: jinja2.Template, values: dict[str, Any]) -> str:
    """`template.render(values)`, stopped once it has produced `MAX_OUTPUT` characters."""
    parts: list[str] = []
    size = 0
    for part in template.generate(values):
        size += len(part)
        if size > MAX_OUTPUT:
            raise TemplateLimit(f"the template rendered more than {MAX_OUTPUT:,} characters")
        parts.append(part)
    return "".join(parts)


def _failure(
    template: jinja2.Template, exc: Exception, message: str, *, hint: str | None = None
) -> SpecError:
    """`message` as a SpecError at the template line that raised `exc` (Jinja2 rewrites a rendering
    traceback so its frames name the template files and lines)."""
    at = Pos(str(template.filename), 1, 1)
    loader = template.environment.loader
    folder = (loader.folder if isinstance(loader, _ScorerLoader) else os.path.dirname(at.path)) + os.sep
    tb = exc.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.startswith(folder):
            at = Pos(filename, tb.tb_lineno, 1)
        tb = tb.tb_next
    error = SpecError(message, path=at.path, line=at.line, col=1, hint=hint)
    attribute = re.search(r"attribute '([^']*)'", str(exc)) if isinstance(exc, SecurityError) else None
    if attribute is not None:
        error.col = _column(error.source_line or "", attribute.group(1))
    return error

"""Limits on what a scorer template may compute: the size of what it builds and its steps.

Jinja2's sandbox keeps a template away from Python's internals, but not from the machine's memory
and time: `{{ "x" * 10**10 }}`, a string doubled in a loop with `~`, or three nested loops over a
policy text each take a process down. A scorer comes with a battery someone else wrote, so its
templates are held to:

- `MAX_BUILT` characters (or items) for any value a `*`, `+`, `**`, `~`, a call or a filter builds,
  checked before the value is made where its size is known from the operands (`*`, `~`, `+`), and a
  number argument over it to any call or filter is refused (`"x".center(10**9)`);
- `MAX_STEPS` steps per render: each loop iteration, call, filter, operator and attribute lookup;
- `MAX_OUTPUT` characters of rendered text.

A template over a limit fails with `TemplateLimit` (a `SecurityError`), which `render_template`
reports at the template's line. `limit_tree` rewrites a parsed template so that its loops, `~`
joins and filter arguments pass through the counters (`tabench_*` globals); operators and calls
pass through the environment's sandbox hooks (`scorer_templates`).
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import jinja2.nodes as nodes
from jinja2.exceptions import SecurityError
from jinja2.visitor import NodeTransformer

#: The longest string or sequence a template may build (characters or items).
MAX_BUILT = 4 * 1024 * 1024
#: The steps one render may take.
MAX_STEPS = 2_000_000
#: The most characters one render may produce.
MAX_OUTPUT = 16 * 1024 * 1024
#: The largest power a template may compute, in bits (a prompt needs no bigger number).
MAX_POWER_BITS = 256


class TemplateLimit(SecurityError):
    """A template went over one of this module's limits."""


_steps: contextvars.ContextVar[list[int]] = contextvars.ContextVar("template_steps")


@contextmanager
def render_budget() -> Iterator[None]:
    """A fresh step budget for one render."""
    token = _steps.set([0])
    try:
        yield
    finally:
        _steps.reset(token)


def step(count: int = 1) -> None:
    """Spend `count` steps of this render's budget; `TemplateLimit` past `MAX_STEPS`."""
    spent = _steps.get(None)
    if spent is None:
        return  # rendering outside `render_template` (a test of Jinja itself): no budget
    spent[0] += count
    if spent[0] > MAX_STEPS:
        raise TemplateLimit(f"the template took more than {MAX_STEPS:,} steps")


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, str | bytes | list | tuple) else None


def _refuse_size(size: int, what: str) -> None:
    if size > MAX_BUILT:
        raise TemplateLimit(f"{what} would build {size:,} characters or items, over {MAX_BUILT:,}")


def check_number(value: Any, what: str) -> Any:
    """`value`, unless it is a whole number too large to be a size or a count."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_BUILT:
        raise TemplateLimit(f"{what} was given {value}, over {MAX_BUILT:,}")
    return value


def binop(operator: str, left: Any, right: Any) -> Any:
    """`left operator right`, refused when its result would be over the limits."""
    step()
    if operator == "*":
        for seq, times in ((left, right), (right, left)):
            size = _size(seq)
            if size is not None and isinstance(times, int):
                _refuse_size(size * max(times, 0), "'*'")
        return left * right
    if operator == "+":
        a, b = _size(left), _size(right)
        if a is not None and b is not None:
            _refuse_size(a + b, "'+'")
        return left + right
    if operator == "**":
        whole = isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0
        if whole and right * math.log2(abs(left)) > MAX_POWER_BITS:
            raise TemplateLimit(f"'**' would compute a number over {MAX_POWER_BITS} bits")
        return left**right
    raise TemplateLimit(f"operator {operator!r} is not bounded")


def joined(*parts: Any) -> str:
    """What `~` makes of `parts` (each as text), refused when it would be over `MAX_BUILT`."""
    step()
    texts = [str(part) for part in parts]
    _refuse_size(sum(len(text) for text in texts), "'~'")
    return "".join(texts)


def counted(iterable: Iterable[Any]) -> Iterator[Any]:
    """`iterable`, a step spent on each item (a loop's iterations)."""
    for item in iterable:
        step()
        yield item


def filter_argument(value: Any) -> Any:
    """A filter's argument, a step spent and a number too large refused."""
    step()
    return check_number(value, "a filter")


#: The globals `limit_tree` calls, by name.
LIMIT_GLOBALS = {"tabench_joined": joined, "tabench_counted": counted, "tabench_argument": filter_argument}


class _Limiter(NodeTransformer):
    """Routes loops, `~` and filter arguments through `LIMIT_GLOBALS`."""

    def _call(self, name: str, args: list[nodes.Expr], like: nodes.Node) -> nodes.Call:
        call = nodes.Call(nodes.Name(name, "load"), args, [], None, None)
        call.set_lineno(like.lineno or 1)
        return call

    def visit_For(self, node: nodes.For) -> nodes.Node:
        node = self.generic_visit(node)  # type: ignore[assignment]
        node.iter = self._call("tabench_counted", [node.iter], node)  # type: ignore[list-item]
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        node = self.generic_visit(node)  # type: ignore[assignment]
        return self._call("tabench_joined", list(node.nodes), node)

    def visit_Filter(self, node: nodes.Filter) -> nodes.Node:
        node = self.generic_visit(node)  # type: ignore[assignment]
        node.args = [self._call("tabench_argument", [arg], node) for arg in node.args]
        return node


def limit_tree(tree: nodes.Template, environment: Any) -> nodes.Template:
    """`tree` rewritten so its loops, joins and filter arguments are counted and bounded."""
    limited = _Limiter().visit(tree)
    limited.set_environment(environment)
    return limited

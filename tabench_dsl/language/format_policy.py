"""The canonical layout of a policy file, for `tabench fmt` and the language server's formatting.

A rule line starts at column 0, each continuation line is indented four spaces, a comment line
starts at column 0 (inside a rule, before one of its continuation lines, it is indented as they
are); trailing white space goes; at most one blank line in a row, none at the start or the end;
a final line break. A rule's text is its lines joined with one space, without their indentation
and trailing white space, so none of this changes a rule.
"""

from __future__ import annotations

#: The indentation of a continuation line.
CONTINUATION_INDENT = "    "


def format_policy(text: str) -> str:
    """The canonical layout of policy `text` (a file the parser accepts)."""
    out: list[str] = []
    blank = False
    in_rule = False
    lines = text.split("\n")
    for number, raw in enumerate(lines):
        line = raw.rstrip(" \t\f\r\v")
        stripped = line.lstrip(" \t\f")
        if not stripped:
            blank = bool(out)
            continue
        if blank:
            out.append("")
            blank = False
        if stripped.startswith("#"):
            continues = in_rule and _next_continues(lines, number + 1)
            out.append((CONTINUATION_INDENT if continues else "") + stripped)
        elif line[0] in " \t\f":
            out.append(CONTINUATION_INDENT + stripped)
        else:
            out.append(line)
            in_rule = True
    return "\n".join(out) + "\n" if out else ""


def _next_continues(lines: list[str], start: int) -> bool:
    """Whether the next line that is neither blank nor a comment, from `start`, continues a rule."""
    for raw in lines[start:]:
        stripped = raw.strip(" \t\f\r\v")
        if not stripped or stripped.startswith("#"):
            continue
        return raw[0] in " \t\f"
    return False

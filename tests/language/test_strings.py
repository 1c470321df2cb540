"""The two string forms of rubric files: `"..."` with JSON escapes, and raw `\"\"\"...\"\"\"` text.

Property tests check that any string written the JSON way reads back unchanged, and that indented
triple-quoted text reads back as `textwrap.dedent` of its lines; hand-written cases pin the edges
of the rule that drops the first and last line breaks.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.core.errors import SpecError
from tabench_dsl.language.parse import parse_rubric


def read_gold(source: str) -> str:
    """The decoded argument of the `gold` line of a one-question rubric written around `source`."""
    text = "question q {\n  gold " + source + "\n}\n"
    (question,) = parse_rubric(text, "t.rubric").questions
    (field,) = question.fields
    (arg,) = field.args
    assert (field.name, arg.kind) == ("gold", "string")
    return arg.value


@settings(derandomize=True, max_examples=300)
@given(st.text(), st.booleans())
def test_json_string_round_trips(value: str, ensure_ascii: bool) -> None:
    assert read_gold(json.dumps(value, ensure_ascii=ensure_ascii)) == value


# Lines of text without line breaks; the block as a whole may not hold three quotes in a row.
_LINE = st.text(st.characters(blacklist_characters="\n\r"), max_size=30)


@settings(derandomize=True, max_examples=300)
@given(st.lists(_LINE, max_size=6), st.sampled_from(["", "  ", "    ", "\t", " \t "]))
def test_triple_quoted_is_dedented_lines(lines: list[str], indent: str) -> None:
    body = "\n".join(indent + line for line in lines)
    if '"""' in body:
        return  # such text cannot be written between triple quotes
    assert read_gold('"""\n' + body + '\n   """') == textwrap.dedent(body)


@pytest.mark.parametrize(
    ("source", "value"),
    [
        # the spec's example: first and last line breaks dropped, then dedented
        ('"""\n    All four;\n    three of four.\n    """', "All four;\nthree of four."),
        # on one line: dedent still applies, so leading white space goes and trailing stays
        ('"""  two  spaces  """', "two  spaces  "),
        ('""""""', ""),
        ('"""\n"""', ""),
        ('"""\n\n"""', ""),
        # only the first line break after the opening quotes is dropped
        ('"""\n\n  a\n  """', "\na"),
        # the last line break goes only when nothing but white space follows it
        ('"""\n  a\n  b"""', "a\nb"),
        ('"""\n  a\n\n  """', "a\n"),
        ('"""\n  a\n \t """', "a"),
        # no escapes: a backslash is a backslash, quotes one or two at a time are text
        ('"""C:\\new\\table"""', "C:\\new\\table"),
        ('"""say "hi" or ""hi"" """', 'say "hi" or ""hi"" '),
        # common indentation only: deeper lines keep their extra indentation
        ('"""\n    list:\n      - one\n    """', "list:\n  - one"),
        # white-space-only lines do not count towards the indentation (as textwrap.dedent does)
        ('"""\n    a\n  \n    b\n    """', "a\n\nb"),
        # text on the opening line counts as a line with no indentation
        ('"""a\n    b\n    """', "a\n    b"),
        # characters that mean something elsewhere are plain text here
        ('"""# not a comment { } {{ x }}"""', "# not a comment { } {{ x }}"),
    ],
)
def test_triple_quoted_edges(source: str, value: str) -> None:
    assert read_gold(source) == value


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ('""', ""),
        ('"tab\\there"', "tab\there"),
        ('"\\u00e9t\\u00e9 \\ud83d\\ude00"', "été 😀"),
        ('"\\"quoted\\" \\\\ \\/"', '"quoted" \\ /'),
        ('"# not a comment"', "# not a comment"),
        ('"raw\ttab"', "raw\ttab"),
    ],
)
def test_one_line_string_examples(source: str, value: str) -> None:
    assert read_gold(source) == value


@pytest.mark.parametrize(
    ("source", "message", "col"),
    [
        ('"bad \\x escape"', "bad escape '\\x' in string", 13),
        ('"short \\u12 escape"', "bad escape '\\u12 e' in string", 15),
        ('"no end', "unterminated string", 8),
        ('"""no end', "unterminated string", 8),
        ('"two\nlines"', "unterminated string", 8),
    ],
)
def test_string_errors(source: str, message: str, col: int) -> None:
    with pytest.raises(SpecError) as raised:
        read_gold(source)
    assert (raised.value.message, raised.value.line, raised.value.col) == (message, 2, col)

"""The two rubric grammars read the same files the same way.

`tabench.lark` reads a file in coarse terminals (fast); `tabench_tokens.lark` reads it one word per
terminal and reports a syntax error at the exact word. `parse_rubric` tries the coarse one first and
reads a file it rejects again with the token one. These tests generate rubric texts, ordinary ones
and broken ones, and check that whenever the coarse grammar reads a file it finds exactly the
questions, fields, arguments and positions the token grammar finds, and that `parse_rubric` gives
the token grammar's result or its error, word for word.
"""

from __future__ import annotations

import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.core.errors import SpecError
from tabench_dsl.core.nodes import Pos
from tabench_dsl.language.parse import (
    Arg,
    Field,
    RubricFile,
    _read_by_tokens,
    _read_coarse,
    parse_rubric,
)
from tabench_dsl.language.string_literals import _dedent

PATH = "r.rubric"

# Whole field lines, right and wrong (rubric.py judges their names and shapes; both grammars take them).
FIELD_LINES = [
    'prompt "Which stages?"',
    'gold "Four \\"stages\\", café \\u00e9"',
    'accept ""',
    "t1 off",
    "prompt",
    'scoring """\n    All four;\n\n    three of four.\n    """',
    'trap """one line"""',
    "x y z",
    'facet missing_minor "order"',
    'exemplar partial "x" why "y" expect fail',
    'exemplar incorrect "x" why "y" holdout',
    'exemplar partial "x" why "y" expect pass holdout',
    'gold "a" "b" c',
    'guide "# not a comment { } {{ x }}"',
    'exemplar question "x"',
    'question "x"',
    'gold "tab\there"',
    'gold "x" # comment',
    'gold """a"b""c"""',
    'gold """\n  x\n  """ why "y"',
]
IDS = ["q1", "a.b", "x-1", "question", "Ab_9", "é"]
# Pieces of anything: keywords, quotes, braces, breaks, odd characters.
PIECES = [
    "question",
    " ",
    "\t",
    "\f",
    "\n",
    "\n",
    "\r\n",
    "\r",
    "{",
    "}",
    "# c",
    "#",
    "prompt",
    "gold",
    "t1",
    "off",
    "why",
    '"x"',
    '"a\\"b"',
    '"bad\\q"',
    '"\\ud800"',
    '""',
    '"""',
    '"""a\n b"""',
    '"""\n  x\n  """',
    '"""a""',
    '""""',
    '"open',
    "\u00a0",
    "-x",
    "q1",
    "é",
    "\v",
    "x#y",
    "\\",
]


@st.composite
def rubric_texts(draw: st.DrawFn) -> str:
    """A rubric file of zero to three question blocks: half of them spaced only the usual ways, half
    in many odd ways; one in four gets a random piece put in somewhere."""
    odd = draw(st.booleans())

    def pick(usual: list[str], unusual: list[str]) -> str:
        return draw(st.sampled_from(usual + unusual if odd else usual))

    out = [pick(["", "# head\n", "\n\n", "  \n# x\n  "], [" ", "\f"])]
    for _ in range(draw(st.integers(0, 3))):
        out.append("question" + pick([" ", "\t"], ["", "\n", " \u00a0"]) + draw(st.sampled_from(IDS)))
        out.append(pick(["", " ", "\t"], ["\f", "\n"]) + "{")
        out.append(pick(["\n", " # c\n", "\r\n", " ", "\n\n  # x\n"], ["\r", "#"]))
        lines = draw(st.lists(st.sampled_from(FIELD_LINES), max_size=5))
        for i, line in enumerate(lines):
            indent, space = pick(["", "  ", "\t"], ["\f"]), pick([" ", "  ", "\t"], [" \f ", "\u00a0", ""])
            out.append(indent + line.replace(" ", space))
            if i < len(lines) - 1:
                out.append(pick(["\n", "\r\n", "\n\n", "  # c\n", "\n  # c\n\n"], ["\r", ""]))
            else:
                out.append(pick(["\n", " ", "", "\r\n"], ["\r", "#"]))
        out.append("}" + pick(["\n", "\n\n", " ", "", " # end", "\r\n", "\n# tail"], ["\r", "\v"]))
    text = "".join(out)
    if text and draw(st.integers(0, 3)) == 0:
        at = draw(st.integers(0, len(text) - 1))
        text = text[:at] + draw(st.sampled_from(PIECES)) + text[at + draw(st.integers(0, 2)) :]
    return text


def outcome(read, text: str) -> RubricFile | str:
    """What reading `text` gives: the parsed file, or the rendered error."""
    try:
        return read(text, PATH)
    except SpecError as exc:
        return exc.render()


def check(text: str) -> bool:
    """Assert the grammars agree on `text`; True when the coarse grammar read it."""
    by_tokens = outcome(_read_by_tokens, text)
    coarse = _read_coarse(text, PATH)
    if coarse is not None:
        assert coarse == by_tokens
    assert outcome(parse_rubric, text) == by_tokens
    return coarse is not None


@pytest.mark.slow
@settings(derandomize=True, max_examples=400, deadline=None)
@given(rubric_texts())
def test_generated_files_read_the_same(text: str) -> None:
    check(text)


@settings(derandomize=True, max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=25).map("".join))
def test_any_pieces_read_the_same(text: str) -> None:
    check(text)


ORDINARY = [
    "",
    "# comments only\n\n",
    'question a {\n  prompt "p"\n  gold "g"\n}\n',
    'question a {\r\n  prompt "p"\r\n  gold "g"\r\n}\r\n',
    '# head\n\nquestion a {   # after the brace\n  prompt "has # and { } inside"  # c\n\n  # line\n'
    '  gold "x" }\nquestion B-2{ prompt "p"\n  gold    "g"\tt1 on }\n',
    'question a {\n  scoring """\n    one\n\n    two\n    """\n  exemplar correct "x" why "y" expect pass\n}',
    'question a { prompt "p" }question b {\n gold "\\u00e9\\n" }  # end',
]


def test_ordinary_files_take_the_coarse_grammar() -> None:
    for text in ORDINARY:
        assert check(text), text


def test_positions_after_a_long_string() -> None:
    text = 'question a {\n  gold """\n    x\n      y""" why "z"\n  t1 off\n}\n'
    (question,) = _read_coarse(text, PATH).questions
    assert question.fields == (
        Field(
            "gold",
            (
                Arg("string", "x\n  y", Pos(PATH, 2, 8)),
                Arg("word", "why", Pos(PATH, 4, 12)),
                Arg("string", "z", Pos(PATH, 4, 16)),
            ),
            Pos(PATH, 2, 3),
        ),
        Field("t1", (Arg("word", "off", Pos(PATH, 5, 6)),), Pos(PATH, 5, 3)),
    )


def test_rare_spellings_go_to_the_token_grammar() -> None:
    # An argument right after the keyword, a keyword `question`, a bad escape: the token grammar
    # reads the first and reports the others.
    text = 'question a {\n  prompt"p"\n  gold "g"\n}\n'
    assert _read_coarse(text, PATH) is None
    (question,) = parse_rubric(text, PATH).questions
    assert question.fields[0] == Field("prompt", (Arg("string", "p", Pos(PATH, 2, 9)),), Pos(PATH, 2, 3))
    reports = {
        'question a {\n  question "p"\n}\n': f"{PATH}:2:3: expected a field or '}}', found 'question'",
        'question a {\n  gold "\\q"\n}\n': f"{PATH}:2:9: bad escape '\\q' in string",
    }
    for text, first_line in reports.items():
        assert _read_coarse(text, PATH) is None
        assert outcome(parse_rubric, text).split("\n")[0] == first_line


DEDENT_CHARS = [" ", " ", " ", "\t", "\n", "\n", "\r", "\f", "\u00a0", "a", "#"]


@settings(derandomize=True, max_examples=500, deadline=None)
@given(st.text(st.sampled_from(DEDENT_CHARS), max_size=40))
def test_dedent_is_textwrap_dedent(text: str) -> None:
    # Triple-quoted text is dedented by a fast path for the usual indentation, textwrap otherwise.
    assert _dedent(text) == textwrap.dedent(text)

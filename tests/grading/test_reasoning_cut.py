"""Cutting reasoning blocks out of a model's text (`tabench_dsl.core.reasoning.cut_reasoning`).

Examples first (each written out by hand), then properties checked with Hypothesis over texts
built from pieces whose expected cut is known: several blocks, nested blocks, an unclosed opener,
tags in any case, text without tags, and that the final text never holds an opener.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.core.reasoning import (
    DEFAULT_REASONING_TAGS,
    ReasoningCut,
    cut_reasoning,
    reasoning_tag_problem,
)

OPEN, CLOSE = "<think>", "</think>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "<think>... the gold is dataclasses with asdict ... I recall a todict() function"
            "</think> Use dataclasses.todict().",
            ReasoningCut(
                "Use dataclasses.todict().",
                "... the gold is dataclasses with asdict ... I recall a todict() function",
                1,
                False,
            ),
        ),
        ("a <think>x<THINK>y</think>z</Think> b", ReasoningCut("a b", "x<THINK>y</think>z", 1, False)),
        ("Intro.\n\n<think>x</think>\n\nAnswer", ReasoningCut("Intro.\n\nAnswer", "x", 1, False)),
        ("ans <think> never closed", ReasoningCut("ans", "never closed", 1, True)),
        ("<think>all thought", ReasoningCut("", "all thought", 1, True)),
        ("opened by the prompt</think> final", ReasoningCut("final", "opened by the prompt", 1, False)),
        ("a <think>1</think> b <think>2</think> c", ReasoningCut("a b c", "1\n2", 2, False)),
        ("<think></think>\n\nplain", ReasoningCut("plain", "", 1, False)),
        ("foo<think>x</think>bar", ReasoningCut("foo bar", "x", 1, False)),
        ("<think>t</think> text </think> after", ReasoningCut("text </think> after", "t", 1, False)),
        ("no tags at all  ", ReasoningCut("no tags at all  ", "", 0, False)),
        ("<thinking>not a tag</thinking>", ReasoningCut("<thinking>not a tag</thinking>", "", 0, False)),
    ],
)
def test_examples(text: str, expected: ReasoningCut) -> None:
    assert cut_reasoning(text) == expected


def test_no_tags_cuts_nothing() -> None:
    text = "x <think>y</think> z"
    assert cut_reasoning(text, ()) == ReasoningCut(text, "", 0, False)


def test_several_pairs_each_nest_on_their_own() -> None:
    tags = (("<think>", "</think>"), ("<|begin_of_thought|>", "<|end_of_thought|>"))
    text = "A <|BEGIN_of_thought|>x <think> y<|end_of_thought|> z <think>w</think> B"
    # Inside the second pair's block a `<think>` is text: the block ends at its own closer.
    assert cut_reasoning(text, tags) == ReasoningCut("A z B", "x <think> y\nw", 2, False)


def test_equal_tags_toggle() -> None:
    assert cut_reasoning("a ~~ b ~~ c ~~ d", (("~~", "~~"),)) == ReasoningCut("a c", "b\nd", 2, True)


@pytest.mark.parametrize("tag", ["", "< think>", "<think>\n"])
def test_bad_tags_are_refused(tag: str) -> None:
    assert reasoning_tag_problem(tag) is not None
    with pytest.raises(ValueError, match="reasoning tag"):
        cut_reasoning("x", ((tag, "</think>"),))


def test_default_is_the_think_pair() -> None:
    assert DEFAULT_REASONING_TAGS == (("<think>", "</think>"),)


# -- properties ------------------------------------------------------------------------------------
#: Text that holds no tag: no `<` at all (so neither `<think>` nor `</think>` can appear).
plain = st.text(alphabet=st.characters(blacklist_characters="<", blacklist_categories=("Cs",)), max_size=30)
#: Text that may hold angle brackets and tag-like words, but never a whole tag.
noisy = (
    st.lists(st.sampled_from(["<", "think", ">", "/", " ", "\n", "a", "<thin", "hink>", "</"]), max_size=12)
    .map("".join)
    .filter(lambda t: not re.search("<think>|</think>", t, re.IGNORECASE))
)


def any_case(tag: str) -> st.SearchStrategy[str]:
    """`tag` with each letter upper or lower case."""
    return st.tuples(*[st.sampled_from(sorted({c.lower(), c.upper()})) for c in tag]).map("".join)


def _has_opener(text: str) -> bool:
    return re.search(re.escape(OPEN), text, re.IGNORECASE) is not None


@settings(derandomize=True, max_examples=300)
@given(st.one_of(plain, noisy))
def test_text_without_tags_is_unchanged(text: str) -> None:
    assert cut_reasoning(text) == ReasoningCut(text, "", 0, False)


@settings(derandomize=True, max_examples=300)
@given(
    st.lists(st.tuples(plain, plain), min_size=1, max_size=5),
    plain,
    any_case(OPEN),
    any_case(CLOSE),
)
def test_several_blocks_in_any_case(
    blocks: list[tuple[str, str]], tail: str, opener: str, closer: str
) -> None:
    text = "".join(f"{outside}{opener}{inside}{closer}" for outside, inside in blocks) + tail
    cut = cut_reasoning(text)
    assert cut.blocks == len(blocks)
    assert not cut.unclosed
    assert cut.reasoning == "\n".join(inside.strip() for _, inside in blocks if inside.strip())
    assert cut.final == _join_expected([outside for outside, _ in blocks] + [tail])
    assert not _has_opener(cut.final)


def _join_expected(pieces: list[str]) -> str:
    """Expected final text for pieces between cuts, built step by step by the stated rule."""
    result = pieces[0]
    for piece in pieces[1:]:
        left, right = result.rstrip(), piece.lstrip()
        if left and right:
            gap = max(result[len(left) :], piece[: len(piece) - len(right)], key=len)
            result = left + (gap or " ") + right
        else:
            result = left + right
    return result


nested_block = st.recursive(
    plain.map(lambda t: OPEN + t + CLOSE),
    lambda inner: st.lists(st.one_of(plain, inner), min_size=1, max_size=4).map(
        lambda parts: OPEN + "".join(parts) + CLOSE
    ),
    max_leaves=8,
)


@settings(derandomize=True, max_examples=300)
@given(plain, nested_block, plain)
def test_nested_blocks_are_one_block(before: str, block: str, after: str) -> None:
    cut = cut_reasoning(before + block + after)
    assert cut.blocks == 1
    assert not cut.unclosed
    assert cut.reasoning == block[len(OPEN) : -len(CLOSE)].strip()
    assert cut.final == _join_expected([before, after])


@settings(derandomize=True, max_examples=300)
@given(
    plain,
    st.one_of(plain, nested_block),
    st.lists(st.one_of(plain, nested_block), max_size=3),
    any_case(OPEN),
)
def test_unclosed_opener_leaves_nothing_after_it(
    before: str, first: str, rest: list[str], opener: str
) -> None:
    # A block still open at the end: its nested blocks are closed, the outer one is not.
    tail = first + "".join(rest)
    cut = cut_reasoning(before + opener + tail)
    assert cut.unclosed
    assert cut.blocks == 1
    assert cut.final == before.rstrip()
    assert cut.reasoning == tail.strip()


tag_soup = st.lists(
    st.one_of(any_case(OPEN), any_case(CLOSE), plain, st.sampled_from(["<", "<thi", "nk>", "</thin", "k>"])),
    max_size=12,
).map("".join)


@settings(derandomize=True, max_examples=500)
@given(tag_soup)
def test_final_never_holds_an_opener(text: str) -> None:
    cut = cut_reasoning(text)
    assert not _has_opener(cut.final)
    assert (cut.blocks == 0) == (cut.final == text and cut.reasoning == "")


@settings(derandomize=True, max_examples=300)
@given(
    tag_soup,
    st.sampled_from(["<r>", "[[", "<|begin_of_thought|>"]),
    st.sampled_from(["</r>", "]]", "<|end|>"]),
)
def test_final_never_holds_an_opener_of_any_pair(text: str, opener: str, closer: str) -> None:
    tags = (("<think>", "</think>"), (opener, closer))
    noisy_text = text.replace("a", opener).replace("b", closer)
    final = cut_reasoning(noisy_text, tags).final
    for pair_opener, _ in tags:
        assert re.search(re.escape(pair_opener), final, re.IGNORECASE) is None

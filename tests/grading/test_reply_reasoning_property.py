"""Property: a verdict inside a judge's reasoning block never decides, wherever the block stands,
whatever noise surrounds it, in whatever letter case its tags are written (Hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers_grading import FAIL, PASS

from tabench_dsl.grading.reply_endings import final_text
from tabench_dsl.grading.verdict import decode_reply

#: Text with no braces and no tag characters: it can neither hold a verdict nor open a block.
noise = st.text(
    alphabet=st.characters(blacklist_characters="{}<>", blacklist_categories=("Cs",)), max_size=40
)
case = st.sampled_from(["think", "THINK", "Think"])


@settings(derandomize=True, max_examples=200)
@given(before=noise, inside=noise, after=noise, opener=case, closer=case, draft_first=st.booleans())
def test_a_verdict_in_a_closed_block_never_counts(before, inside, after, opener, closer, draft_first) -> None:
    block = f"<{opener}>{inside}{PASS}{inside}</{closer}>"
    reply = f"{before}{block}{after}{FAIL}" if draft_first else f"{before}{FAIL}{after}{block}"
    decoded = decode_reply(final_text(reply), facet_names=("missing_minor",))
    assert decoded.verdict is not None and decoded.verdict.verdict == "fail"


@settings(derandomize=True, max_examples=200)
@given(before=noise, inside=noise, opener=case)
def test_a_draft_in_an_unclosed_block_is_no_verdict(before, inside, opener) -> None:
    reply = f"{before}<{opener}>{inside}{PASS}{inside}"
    assert decode_reply(final_text(reply), facet_names=("missing_minor",)).verdict is None

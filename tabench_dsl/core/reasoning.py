"""Cutting reasoning blocks (`<think>...</think>`) out of a model's text, in one linear scan.

Reasoning models write their chain of thought into the text they return, between an opening and
a closing tag. What is graded (by T1 and by the judge), and what a judge's verdict is read from,
is the final text: the text with every reasoning block cut. The rules:

- any number of blocks, wherever they stand; tags are matched case-insensitively;
- blocks nest: inside a block opened by one pair, only that pair's opener and closer count (the
  other pairs' tags are reasoning text), and the block ends at the closer that balances it;
- an opener left unclosed makes everything from it on reasoning (a reply cut off mid-thought has
  no final text after the opener);
- a closer before any opener makes everything before it reasoning: chat templates that open the
  block in the prompt (DeepSeek-R1 style) have the model write only its closer;
- a closer with no block open later on is text, as is any tag when `tags` is empty.

The scan searches for the next tag that matters from where it stands and never steps back, so it
is linear in the text for a given set of tags. Tags may not be empty nor hold blank space: that
keeps a cut from ever joining two pieces of text into a new opener.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

import msgspec

#: The reasoning tags cut by default: the `<think>` pair that Qwen3, DeepSeek-R1, QwQ and the
#: models trained after them write.
DEFAULT_REASONING_TAGS: tuple[tuple[str, str], ...] = (("<think>", "</think>"),)


class ReasoningCut(msgspec.Struct, frozen=True):
    """A text split into its final part and the reasoning cut from it.

    `final` is the text with every reasoning block cut (the blank space a cut leaves is closed up
    to the wider of its two sides, and none is left at either end of a cut); `reasoning` is what
    the blocks held, each stripped, the empty ones left out, joined by "\\n"; `blocks` counts the
    blocks cut (an empty one too); `unclosed` says an opener had no closer, so everything from it
    on is reasoning. A text without reasoning tags comes back unchanged as `final`.
    """

    final: str
    reasoning: str
    blocks: int
    unclosed: bool


class ReasoningInfo(msgspec.Struct, frozen=True):
    """What a record says was cut from its answer before grading (`Record.reasoning`).

    `final` is the answer T1 and the judge graded (the record's `answer` keeps it as given);
    `blocks` counts the blocks cut and `characters` the length of their text (`ReasoningCut.
    reasoning`: the tags left out), `unclosed` says an opener had no closer; `tags` are the pairs
    cut, so a reader can cut the same answer again to show its reasoning.
    """

    final: str
    blocks: int
    characters: int
    unclosed: bool = False
    tags: tuple[tuple[str, str], ...] = DEFAULT_REASONING_TAGS

    def describe(self) -> str:
        """What was cut, in the words the viewer, the report and `adjudicate` show it with."""
        blocks = f"{self.blocks} block" + ("" if self.blocks == 1 else "s")
        line = f"reasoning cut before grading: {blocks}, {self.characters:,} characters"
        if self.unclosed:
            line += "; the answer ends inside a reasoning block, so it has no final text after it"
        return line

    def reasoning_of(self, answer: str) -> str:
        """The reasoning cut from `answer` (the record's answer as given), cut again with `tags`."""
        return cut_reasoning(answer, self.tags).reasoning


def reasoning_info(cut: ReasoningCut, tags: Sequence[tuple[str, str]]) -> ReasoningInfo | None:
    """What a record keeps of `cut` (None when nothing was cut: the record says nothing)."""
    if cut.blocks == 0:
        return None
    pairs = tuple((opener, closer) for opener, closer in tags)
    return ReasoningInfo(cut.final, cut.blocks, len(cut.reasoning), cut.unclosed, pairs)


class _Patterns(msgspec.Struct, frozen=True):
    """The compiled searches of one set of tags: what matters outside a block and inside each."""

    #: Any pair's opener; the group that matched is named `p<index>` after its pair.
    openers: re.Pattern[str]
    #: Any pair's closer (to find a closer that comes before every opener).
    closers: re.Pattern[str]
    #: Per pair: its closer (group `close`) or its opener (group `open`); the closer is listed
    #: first, so a pair whose two tags are equal toggles instead of nesting.
    inside: tuple[re.Pattern[str], ...]


def reasoning_tag_problem(tag: object) -> str | None:
    """Why `tag` cannot be a reasoning tag (None when it can): a non-empty string without blanks."""
    if not isinstance(tag, str):
        return "a reasoning tag is a string"
    if not tag:
        return "a reasoning tag may not be empty"
    if any(ch.isspace() for ch in tag):
        return "a reasoning tag may not hold blank space"
    return None


def _alternation(named: Sequence[tuple[str, str]]) -> re.Pattern[str]:
    """One case-insensitive search for any of the (group name, tag) pairs given."""
    # Longest first, so at one position the longer of two tags sharing a prefix wins; the sort is
    # stable, so of two tags of one length the one listed first wins.
    ordered = sorted(named, key=lambda item: len(item[1]), reverse=True)
    return re.compile("|".join(f"(?P<{name}>{re.escape(tag)})" for name, tag in ordered), re.IGNORECASE)


@lru_cache(maxsize=32)
def _patterns(tags: tuple[tuple[str, str], ...]) -> _Patterns:
    for pair in tags:
        for tag in pair:
            problem = reasoning_tag_problem(tag)
            if problem is not None:
                raise ValueError(f"{problem}: {tag!r}")
    return _Patterns(
        openers=_alternation([(f"p{i}", opener) for i, (opener, _) in enumerate(tags)]),
        closers=_alternation([(f"p{i}", closer) for i, (_, closer) in enumerate(tags)]),
        inside=tuple(_alternation([("close", closer), ("open", opener)]) for opener, closer in tags),
    )


def _block_end(inside: re.Pattern[str], text: str, start: int) -> tuple[int, int] | None:
    """Where the block opened just before `start` closes: (closer start, closer end), or None."""
    depth = 1
    pos = start
    while (match := inside.search(text, pos)) is not None:
        pos = match.end()
        if match.lastgroup == "close":
            depth -= 1
            if depth == 0:
                return match.start(), match.end()
        else:
            depth += 1
    return None


def _join(pieces: list[str]) -> str:
    """The text outside the blocks, each cut closed up to the wider blank space beside it.

    Built as a list and joined once: joining piece by piece would copy the text at every cut.
    """
    kept = [pieces[0].rstrip()]
    tail = pieces[0][len(kept[0]) :]  # the blank space at the end of the text kept so far
    has_text = bool(kept[0])
    for piece in pieces[1:]:
        right = piece.lstrip()
        body = right.rstrip()
        if has_text and body:
            # A cut is a boundary: the words either side of it never run together.
            kept.append(max(tail, piece[: len(piece) - len(right)], key=len) or " ")
        if body:
            kept.append(body)
            tail = right[len(body) :]
            has_text = True
        elif has_text:
            tail = ""  # a blank piece between two cuts: the cut before it closed up the space
        else:
            tail = right  # nothing kept yet: no blank space before the first text
    return "".join(kept) + tail


def cut_reasoning(text: str, tags: Sequence[tuple[str, str]] = DEFAULT_REASONING_TAGS) -> ReasoningCut:
    """`text` with every reasoning block between one of the `tags` pairs cut (module docstring).

    Raises ValueError when a tag is empty or holds blank space (the manifest and the flag check
    that first, with a message that names where).
    """
    pairs = tuple((opener, closer) for opener, closer in tags)
    if not pairs:
        return ReasoningCut(final=text, reasoning="", blocks=0, unclosed=False)
    patterns = _patterns(pairs)
    pieces: list[str] = []
    reasoning: list[str] = []
    pos = 0
    first_opener = patterns.openers.search(text)
    # A closer wholly before the first opener (searched up to it only: the text is read once).
    first_closer = patterns.closers.search(
        text, 0, len(text) if first_opener is None else first_opener.start()
    )
    if first_closer is not None:
        # The block was opened by the prompt: all before the first closer is reasoning.
        pieces.append("")
        reasoning.append(text[: first_closer.start()])
        pos = first_closer.end()
    unclosed = False
    while (opener := patterns.openers.search(text, pos)) is not None:
        pieces.append(text[pos : opener.start()])
        pair = int((opener.lastgroup or "p0")[1:])
        end = _block_end(patterns.inside[pair], text, opener.end())
        if end is None:
            reasoning.append(text[opener.end() :])
            unclosed = True
            pos = len(text)
            break
        reasoning.append(text[opener.end() : end[0]])
        pos = end[1]
    if not reasoning:
        return ReasoningCut(final=text, reasoning="", blocks=0, unclosed=False)
    pieces.append(text[pos:])
    kept = [block.strip() for block in reasoning if block.strip()]
    return ReasoningCut(
        final=_join(pieces), reasoning="\n".join(kept), blocks=len(reasoning), unclosed=unclosed
    )

"""What a judge's reply is beside its verdict: cut off, refused, without text, or reasoning first.

The grading loop (`runner`) asks these questions of every reply, fresh or cached:

- **Reasoning never decides.** A reply's reasoning blocks (`<think>...</think>` and the battery's
  other tags, `core.reasoning.cut_reasoning`) are cut before it is decoded (`final_text`): a verdict
  inside one never counts, and a reply cut off inside an unclosed block has no final text at all.
  Reasoning the server sends apart (vLLM's `reasoning_content`, Anthropic's `thinking` blocks) is
  never part of the text the backends return.
- **A cut-off reply** (`cut_off`: the server said the token budget ran out, or it spent reasoning
  tokens and left no final text) is asked again once, with twice the budget, as its own attempt;
  cut off again, the answer ends `adjudicate`, cause `truncated`, with `truncated_reason`.
- **A refusal** (OpenAI's `refusal`, Anthropic's `stop_reason: refusal`, a content filter), tool
  calls with no text, and a reply with no text at all are the judge's answer: malformed, so asked
  again once like any malformed reply (`problem`), then `adjudicate`, cause `refusal` or
  `malformed` (`twice_malformed`). Their tokens are recorded like any reply's.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.reasoning import DEFAULT_REASONING_TAGS, cut_reasoning
from ..core.records import Attempt, Cause
from .judges.base import STOP_CONTENT_FILTER, STOP_LENGTH, STOP_REFUSAL, STOP_TOOL_CALLS

#: The most characters of a refusal's text quoted in a reason (the attempt keeps it whole).
_QUOTED = 200


def final_text(raw: str, tags: Sequence[tuple[str, str]] = DEFAULT_REASONING_TAGS) -> str:
    """The part of a judge's reply its verdict is read from: `raw` without its reasoning blocks."""
    return cut_reasoning(raw, tags).final


def cut_off(attempt: Attempt, final: str) -> bool:
    """Whether the reply of `attempt` was cut off at its token budget: the server said so, or the
    model spent reasoning tokens and left no final text (the budget went on thinking)."""
    if attempt.stop == STOP_LENGTH:
        return True
    return not final.strip() and attempt.tokens.reasoning > 0 and attempt.stop in (None, "")


def doubled_budget(max_tokens: int) -> int:
    """The budget a cut-off reply is asked again with."""
    return max_tokens * 2


def truncated_reason(first: int, second: int) -> str:
    """The reason of an answer whose judge was cut off twice: the budgets, and how to raise them."""
    return (
        f"the judge's reply was cut off at its token budget twice ({first} tokens, then {second} on "
        f"the re-ask): raise it with --max-tokens N (or judge.max_tokens in battery.yaml) above {second}"
    )


def problem(attempt: Attempt, final: str) -> str | None:
    """Why a reply that is no verdict by its kind is malformed (a refusal, tool calls, a content
    filter), or None when it is a text to decode."""
    if attempt.stop in (STOP_REFUSAL, STOP_CONTENT_FILTER) or attempt.refusal is not None:
        return f"the judge refused: {_quoted(attempt.refusal or 'finish_reason: ' + str(attempt.stop))}"
    if attempt.stop == STOP_TOOL_CALLS and not final.strip():
        return "the reply holds tool calls and no text"
    return None


def twice_malformed(attempt: Attempt, problem_text: str | None) -> tuple[Cause, str]:
    """The cause and reason of an answer whose judge gave no verdict twice, the last time in
    `attempt`: `refusal` when that reply was a refusal, else `malformed`."""
    if attempt.stop in (STOP_REFUSAL, STOP_CONTENT_FILTER) or attempt.refusal is not None:
        return (
            "refusal",
            f"refused twice: {_quoted(attempt.refusal or 'finish_reason: ' + str(attempt.stop))}",
        )
    return "malformed", f"malformed reply twice: {problem_text}"


def _quoted(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _QUOTED else text[: _QUOTED - 3] + "..."

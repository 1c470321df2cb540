"""An answer over `--max-answer-bytes`, as its record keeps it: cut, never whole.

The answer is not sent to a judge; its record ends `adjudicate` (cause `oversized`) and holds the
answer's first `limit` bytes of UTF-8 (cut on a character boundary), with the whole answer's length
and sha256 in the reason, so a person can see what it was and tell it from another, and a results
file cannot be made to grow by a hundred megabytes from one answer (an `.eval` entry inflated, a
long JSONL line). An answer whose reasoning was cut (`core.reasoning`) is held to the limit by its
final text, and its record keeps both the answer as given and that final text cut.
"""

from __future__ import annotations

import hashlib


def cut_answer(text: str, limit: int) -> tuple[str, int, str]:
    """`text` cut to at most `limit` bytes of UTF-8, the whole text's size in bytes, and its sha256."""
    data = text.encode("utf-8", "surrogatepass")
    cut = data[:limit].decode("utf-8", "ignore")  # a character split at the cut is dropped whole
    return cut, len(data), hashlib.sha256(data).hexdigest()


def oversized_reason(size: int, sha256: str, limit: int, *, reasoning_cut: bool = False) -> str:
    """The reason of an oversized answer's record. With `reasoning_cut`, the answer's reasoning
    blocks were cut first: the limit was held to its final text, and the record keeps the answer
    as given and that final text each to their first `limit` bytes."""
    if reasoning_cut:
        return (
            f"the final answer (its reasoning cut) is {size} bytes of UTF-8, over the limit of {limit} "
            f"(--max-answer-bytes): it was not sent to the judge; the answer as given and its final text "
            f"are kept here to their first {limit} bytes each (sha256 of the whole final answer: {sha256})"
        )
    return (
        f"the answer is {size} bytes of UTF-8, over the limit of {limit} (--max-answer-bytes): it was "
        f"not sent to the judge; its first {limit} bytes are kept here (sha256 of the whole: {sha256})"
    )

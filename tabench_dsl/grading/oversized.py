"""An answer over `--max-answer-bytes`, as its record keeps it: cut, never whole.

The answer is not sent to a judge; its record ends `adjudicate` (cause `oversized`) and holds the
answer's first `limit` bytes of UTF-8 (cut on a character boundary), with the whole answer's length
and sha256 in the reason, so a person can see what it was and tell it from another, and a results
file cannot be made to grow by a hundred megabytes from one answer (an `.eval` entry inflated, a
long JSONL line).
"""

from __future__ import annotations

import hashlib


def cut_answer(text: str, limit: int) -> tuple[str, int, str]:
    """`text` cut to at most `limit` bytes of UTF-8, the whole text's size in bytes, and its sha256."""
    data = text.encode("utf-8", "surrogatepass")
    cut = data[:limit].decode("utf-8", "ignore")  # a character split at the cut is dropped whole
    return cut, len(data), hashlib.sha256(data).hexdigest()


def oversized_reason(size: int, sha256: str, limit: int) -> str:
    """The reason of an oversized answer's record."""
    return (
        f"the answer is {size} bytes of UTF-8, over the limit of {limit} (--max-answer-bytes): it was "
        f"not sent to the judge; its first {limit} bytes are kept here (sha256 of the whole: {sha256})"
    )

"""`adjudicate --audit N --by uncertainty`: audits drawn where the judge was unsure.

Every answer the judge (or T1) decided has a weight of 1, plus `DOUBT_WEIGHT` for each sign that
the verdict was hard to reach (`doubts`):

- `stern`: the judge needed the stern retry (its first replies contradicted themselves);
- `re-ask`: its reply had to be asked for again in the right format;
- `repeat split`: `--repeat` asked it several times and the asks disagreed;
- `panel split`: the judges of a panel voted differently;
- `long T1 pass`: T1 passed an answer at least `LONG_ANSWER_RATIO` times as long as its gold (every
  gold token is in it, among much else, which may say the opposite);
- `low margin`: the builtin judge's verdict was one element away from the other verdict (its
  reason names the count: "names 2 of 4 elements; scoring needs 3", "missing 1 of 3 required").

Each answer's inclusion probability is proportional to its weight, `N` in all, none above 1
(`inclusion_probabilities`: those that would exceed 1 are drawn for certain, the rest share what
is left). The draw is systematic: the answers in an order given by the sha256 of the seed and their
(system, question), and the points `start, start + 1, ...` (`start` from the seed's sha256) laid
along their stacked probabilities; an answer is drawn when a point falls in its stretch. So exactly
N are drawn (a probability sum is N), each with its own probability, the same seed and file draw
the same answers, and two reviewers draw the same ones. Each audit records its probability
(`Decision.inclusion_probability`); the validated score weights the audit by its inverse
(`validated`), so the estimate stays unbiased however the draw leaned. A reviewer's second draw
is made over the answers they have not audited yet, its probabilities over that pool: one draw of
the N wanted is what the weighting is exact for.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterable, Sequence, Set

from ..core.records import Record
from .audit import drawable

#: What each sign of doubt adds to an answer's weight of 1.
DOUBT_WEIGHT = 4.0

#: A T1 pass of an answer this many times as long as its gold is a doubt.
LONG_ANSWER_RATIO = 3

#: The builtin judge's reasons that give its count: named of total, and how many scoring needs.
_NAMED = re.compile(r"names (\d+) of (\d+) elements; scoring needs (\d+)")
_MISSING_ONE = re.compile(r"^missing 1 of \d+ required")


def doubts(record: Record, gold: str | None) -> list[str]:
    """The signs that the judge was unsure of `record`'s verdict (module docstring)."""
    found = []
    kinds = {attempt.kind for attempt in record.all_attempts()}
    if "stern" in kinds:
        found.append("stern")
    if "format" in kinds:
        found.append("re-ask")
    if len({ask.verdict for ask in record.repetitions}) > 1:
        found.append("repeat split")
    if len({vote.verdict for vote in record.votes}) > 1:
        found.append("panel split")
    if record.tier == "t1" and gold and len(record.graded_answer) >= LONG_ANSWER_RATIO * len(gold):
        found.append("long T1 pass")
    if record.judge.backend == "builtin" and _low_margin(record.reason):
        found.append("low margin")
    return found


def _low_margin(reason: str) -> bool:
    named = _NAMED.search(reason)
    if named is not None:
        return abs(int(named.group(1)) - int(named.group(3))) <= 1
    return _MISSING_ONE.search(reason) is not None


def inclusion_probabilities(weights: Sequence[float], n: int) -> list[float]:
    """Probabilities proportional to `weights` adding up to `n` (at most the count), none above 1."""
    n = max(0, min(n, len(weights)))
    probabilities = [0.0] * len(weights)
    if n == 0:
        return probabilities
    certain: set[int] = set()
    while True:
        left = [i for i in range(len(weights)) if i not in certain]
        total = sum(weights[i] for i in left)
        scale = (n - len(certain)) / total if total else 0.0
        over = {i for i in left if weights[i] * scale >= 1.0}
        if not over:
            break
        certain |= over
    for i in range(len(weights)):
        probabilities[i] = 1.0 if i in certain else weights[i] * scale
    return probabilities


def systematic_draw(probabilities: Sequence[float], start: float) -> list[int]:
    """The indices a systematic draw takes: where a point `start + k` falls in an index's stretch of
    the stacked probabilities (`start` in [0, 1)). Each index is drawn with its own probability."""
    drawn = []
    stacked = 0.0
    for i, p in enumerate(probabilities):
        low, stacked = stacked, stacked + p
        # A point lies in [low, stacked) when the count of points below them differs.
        if math.floor(stacked - start + 1e-12) > math.floor(low - start + 1e-12):
            drawn.append(i)
    return drawn


def uncertainty_draw(
    records: Iterable[Record],
    n: int,
    *,
    seed: int,
    done: Set[tuple[str, str]] | None,
    gold_of: Callable[[str], str | None],
) -> list[tuple[Record, float, list[str]]]:
    """Up to `n` decided answers drawn by uncertainty, each with its inclusion probability and its
    doubts, in a shown order that gives nothing away (module docstring)."""
    pool = sorted(drawable(records, done), key=lambda r: _rank(seed, "order", r))
    signs = [doubts(record, gold_of(record.question)) for record in pool]
    probabilities = inclusion_probabilities([1.0 + DOUBT_WEIGHT * len(s) for s in signs], n)
    start = int.from_bytes(hashlib.sha256(f"{seed}\0start".encode()).digest()[:8], "big") / 2**64
    chosen = systematic_draw(probabilities, start)[:n]
    drawn = [(pool[i], probabilities[i], signs[i]) for i in chosen]
    return sorted(drawn, key=lambda item: _rank(seed, "show", item[0]))


def _rank(seed: int, purpose: str, record: Record) -> str:
    return hashlib.sha256(f"{seed}\0{purpose}\0{record.system}\0{record.question}".encode()).hexdigest()

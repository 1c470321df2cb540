"""Judge reply text -> `Verdict` (docs/language.md section 8.2). Pure functions, no I/O.

A reply is `{"verdict": "pass"|"fail", "reason": str, "facets": {name: bool, ...}}`. Some departures
are tolerated and recorded in `Decoded.tolerated`, by these labels:

    whitespace          white space around the reply
    code_fence          the object stood in a ``` fence (```json or bare)
    surrounding_prose   other text stood around the object
    several_objects     more than one JSON object stood in the reply; the last verdict won
    verdict_case        the verdict in another letter case ("PASS", "Fail")
    missing_facets      no `facets` key (read as no facets observed)

Anything else is malformed (`Decoded.verdict` is None and `Decoded.problem` says why). Where the
spec is silent this module decides, strictly, because the spec's list of tolerated forms is closed:

- an extra top-level key (`"confidence": 0.9`) is malformed;
- an unknown facet name is malformed, and so is a facet value that is not a boolean;
- `"facets": null` is malformed (not an object); an empty `{}` is fine (no facet observed);
- an empty reason is a string and is accepted;
- a verdict object wrapped in another object (`{"result": {...}}`) is malformed: a decodable JSON
  object is never searched inside, so junk is never read as a verdict;
- text that is not JSON counts as prose, brackets included: `[{...verdict...}]` and
  `{note: {...verdict...}}` yield the inner verdict with `surrounding_prose`;
- a reply encoded twice (a JSON string holding the object) is malformed;
- a reply over MAX_REPLY_BYTES of UTF-8 is malformed, whatever it holds (no verdict needs that
  much, and nothing longer is kept: `cut_reply`);
- `several_objects` counts every JSON object standing in the reply, verdict or not;
- work is bounded: at most MAX_PASSES brace-pairing passes and MAX_CANDIDATES decoded spans.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Literal

import msgspec

from ..core.scorer import FACET_NAMES

#: A reply that is entirely one fenced block: ```json\n...\n``` (any info word) or ```...```.
FENCED = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\n?(?P<body>.*?)\n?[ \t]*```", re.DOTALL)

#: A fence marker line or an inline fence marker, removed before deciding whether prose is left.
FENCE_MARK = re.compile(r"```(?:[ \t]*[A-Za-z0-9_+-]+[ \t]*(?=\r?\n))?")

#: The characters the brace scanner stops at; everything else is skipped in one regex step.
_SCAN_STOP = re.compile(r'[{}"\\]')
_STRING_STOP = re.compile(r'["\\]')

#: At most this many balanced spans are decoded in one reply, and at most this many brace-pairing
#: passes made over it: a reply flooded with braces costs bounded work (and is malformed).
MAX_CANDIDATES = 2048
MAX_PASSES = 4

#: A reply longer than this many bytes of UTF-8 is malformed (and kept cut to this: `cut_reply`).
MAX_REPLY_BYTES = 64 * 1024
#: What `cut_reply` puts after the part of a reply it keeps.
REPLY_CUT_MARK = f"\n[tabench: the reply was over {MAX_REPLY_BYTES} bytes; the rest is cut]"

_PROBLEM_ECHO = 40
_FIELD_TYPES = (("verdict", "a string"), ("reason", "a string"), ("facets", "an object of booleans"))


class Verdict(msgspec.Struct, frozen=True):
    """A judge's decoded verdict. `facets` holds only the facets the judge gave."""

    verdict: Literal["pass", "fail"]
    reason: str
    facets: dict[str, bool] = msgspec.field(default_factory=dict)


class Decoded(msgspec.Struct, frozen=True):
    """The outcome of decoding one reply: the verdict (None when malformed), the tolerated
    departures (labels above, in the order met) and, when malformed, a short problem."""

    verdict: Verdict | None
    tolerated: tuple[str, ...] = ()
    problem: str | None = None

    @property
    def malformed(self) -> bool:
        return self.verdict is None


class _Wire(msgspec.Struct, forbid_unknown_fields=True):
    """The strict wire shape; the letter case of `verdict` and the facet names are checked after."""

    verdict: str
    reason: str
    facets: dict[str, bool] | msgspec.UnsetType = msgspec.UNSET


_wire_decoder = msgspec.json.Decoder(_Wire)
_any_decoder = msgspec.json.Decoder()


class _Malformed(Exception):
    """A candidate that is JSON but not a valid verdict; the message is the problem."""


def decode_reply(text: str, *, facet_names: Iterable[str] = FACET_NAMES) -> Decoded:
    """Decode a judge's reply content into a `Verdict`, recording tolerated departures.

    Fast path: the stripped (and unfenced) text is exactly one verdict object. Otherwise every
    balanced `{...}` in the text is tried and the last one that decodes as a verdict wins.
    """
    if _over(text, MAX_REPLY_BYTES):
        return Decoded(None, (), f"reply over {MAX_REPLY_BYTES} bytes")
    names = frozenset(facet_names)
    tolerated: list[str] = []
    body = text.strip()
    if body != text:
        tolerated.append("whitespace")
    if not body:
        return Decoded(None, tuple(tolerated), "empty reply")
    fenced = FENCED.fullmatch(body)
    if fenced:
        tolerated.append("code_fence")
        body = fenced.group("body").strip()
    try:
        verdict, case_changed, facets_missing = _strict(body.encode(), names)
    except (msgspec.DecodeError, _Malformed) as exc:
        first_problem = _problem_of(exc)
    else:
        return Decoded(verdict, _finish(tolerated, case_changed, facets_missing))
    return _search(body, names, tolerated, first_problem)


def cut_reply(text: str) -> str:
    """`text` as tabench keeps a reply: whole when it is at most MAX_REPLY_BYTES of UTF-8, else its
    first MAX_REPLY_BYTES (whole characters) and `REPLY_CUT_MARK`. The cut reply is still over the
    limit, so it decodes as malformed again wherever it is read back (the cache, `replay:`), and a
    person sees how it began. A reply cut already is kept as it is."""
    if not _over(text, MAX_REPLY_BYTES):
        return text
    if text.endswith(REPLY_CUT_MARK) and not _over(text[: -len(REPLY_CUT_MARK)], MAX_REPLY_BYTES):
        return text
    data = text.encode("utf-8", "surrogatepass")
    end = MAX_REPLY_BYTES
    while end > 0 and data[end] & 0xC0 == 0x80:  # a continuation byte: its character starts before
        end -= 1
    return data[:end].decode("utf-8", "surrogatepass") + REPLY_CUT_MARK


def _over(text: str, limit: int) -> bool:
    """Whether `text` is over `limit` bytes of UTF-8; most replies are too short to need encoding
    (4 bytes a character at most)."""
    if len(text) * 4 <= limit:
        return False
    return len(text) > limit or len(text.encode("utf-8", "surrogatepass")) > limit


def _search(body: str, names: frozenset[str], tolerated: list[str], first_problem: str) -> Decoded:
    """Find the last verdict object among the JSON objects standing in `body`."""
    found: tuple[Verdict, bool, bool] | None = None
    spans: list[tuple[int, int]] = []
    problem: str | None = None
    for start, end, value in _objects(body):
        spans.append((start, end))
        try:
            found = _strict(value, names)
        except (msgspec.DecodeError, _Malformed) as exc:
            problem = _problem_of(exc)
    if found is None:
        if problem is None:
            problem = first_problem if body.startswith("{") else "no JSON object in the reply"
        return Decoded(None, tuple(tolerated), problem)
    # What is left once every JSON object is taken out is fence markers and prose.
    gaps = zip([0, *(end for _, end in spans)], [*(start for start, _ in spans), len(body)], strict=True)
    rest = "".join(body[a:b] for a, b in gaps)
    if FENCE_MARK.search(rest) and "code_fence" not in tolerated:
        tolerated.append("code_fence")
    if FENCE_MARK.sub("", rest).strip():
        tolerated.append("surrounding_prose")
    if len(spans) > 1:
        tolerated.append("several_objects")
    verdict, case_changed, facets_missing = found
    return Decoded(verdict, _finish(tolerated, case_changed, facets_missing))


def _finish(tolerated: list[str], case_changed: bool, facets_missing: bool) -> tuple[str, ...]:
    if case_changed:
        tolerated.append("verdict_case")
    if facets_missing:
        tolerated.append("missing_facets")
    return tuple(tolerated)


def _strict(raw: bytes, names: frozenset[str]) -> tuple[Verdict, bool, bool]:
    """Decode one candidate strictly; returns (verdict, verdict case changed, facets missing)."""
    try:
        wire = _wire_decoder.decode(raw)
    except msgspec.ValidationError as exc:
        raise _Malformed(_validation_problem(str(exc))) from None
    except RecursionError:
        raise _Malformed("JSON nested too deeply") from None
    word = wire.verdict.lower()
    if word not in ("pass", "fail"):
        raise _Malformed(f"verdict must be pass or fail, got {_echo(wire.verdict)}")
    facets_missing = wire.facets is msgspec.UNSET
    facets: dict[str, bool] = {} if isinstance(wire.facets, msgspec.UnsetType) else wire.facets
    unknown = sorted(set(facets) - names)
    if unknown:
        raise _Malformed(f"unknown facet {_echo(unknown[0])}")
    verdict = Verdict(word, wire.reason, dict(facets))  # type: ignore[arg-type]
    return verdict, word != wire.verdict, facets_missing


def _validation_problem(message: str) -> str:
    """Turn msgspec's validation message into a short problem naming the field."""
    if message.startswith("Object missing required field"):
        field = message.split("`")[1] if "`" in message else "a field"
        return f"{field} missing"
    if message.startswith("Object contains unknown field"):
        field = message.split("`")[1] if "`" in message else "?"
        return f"unknown key {_echo(field)}"
    for field, wanted in _FIELD_TYPES:
        if f"$.{field}" in message:
            return f"{field} must be {wanted}"
    if message.startswith("Expected `object`"):
        return "not a JSON object"
    return message[:80]


def _problem_of(exc: Exception) -> str:
    if isinstance(exc, _Malformed):
        return str(exc)
    return "not valid JSON"


def _echo(value: str) -> str:
    """A value quoted for a problem message, cut short so a reply is never echoed at length."""
    text = value if len(value) <= _PROBLEM_ECHO else value[: _PROBLEM_ECHO - 3] + "..."
    return repr(text)


def _objects(body: str) -> Iterator[tuple[int, int, bytes]]:
    """Yield (start, end, utf-8 bytes) of each balanced `{...}` that decodes as JSON, in order.

    A span inside an object already yielded is not tried (a verdict is never dug out of another
    JSON object). One pass pairs the braces; quotes count only inside braces, so an apostrophe or a
    stray quote in prose does not blind it. A brace left open (prose like `{oops "`) may have put
    the pass out of step with the strings, so the pass is repeated from just after it, a bounded
    number of times.
    """
    spans: set[tuple[int, int]] = set()
    start = 0
    for _ in range(MAX_PASSES):
        found, unclosed = _spans(body, start)
        spans.update(found)
        if unclosed is None:
            break
        start = unclosed + 1
    covered = 0
    for tried, (begin, end) in enumerate(sorted(spans, key=lambda span: (span[0], -span[1]))):
        if tried >= MAX_CANDIDATES:
            return
        if begin < covered:
            continue
        raw = body[begin:end].encode()
        try:
            _any_decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            continue
        covered = end
        yield begin, end, raw


def _spans(body: str, start: int) -> tuple[list[tuple[int, int]], int | None]:
    """The balanced brace spans found in one pass from `start`, and the first `{` left open."""
    stack: list[int] = []
    spans: list[tuple[int, int]] = []
    index = start
    while True:
        match = _SCAN_STOP.search(body, index)
        if match is None:
            break
        char = match.group()
        index = match.end()
        if char == "{":
            stack.append(match.start())
        elif char == "}":
            if stack:
                spans.append((stack.pop(), index))
        elif char == '"' and stack:
            index = _string_end(body, index)
            if index < 0:
                break
        # a quote outside braces is prose; a backslash outside a string is not JSON
    return spans, (stack[0] if stack else None)


def _string_end(body: str, index: int) -> int:
    """The index just past the closing quote of a JSON string whose body starts at `index`."""
    while True:
        match = _STRING_STOP.search(body, index)
        if match is None:
            return -1
        if match.group() == '"':
            return match.end()
        index = match.end() + 1  # skip the escaped character

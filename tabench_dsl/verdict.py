"""Judge reply text -> `Verdict` (spec section 5). Pure functions, no I/O.

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
  object is never searched inside, so junk is never read as a verdict.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Literal

import msgspec

#: The facet names of scorer tabench-1.1; a scorer with other names passes its own list.
DEFAULT_FACETS: tuple[str, ...] = ("extra_correct_info", "missing_minor", "erroneous_assertion")

#: A reply that is entirely one fenced block: ```json\n...\n``` (any info word) or ```...```.
FENCED = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\n?(?P<body>.*?)\n?[ \t]*```", re.DOTALL)

#: A fence marker line or an inline fence marker, removed before deciding whether prose is left.
FENCE_MARK = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*")

#: The characters the brace scanner stops at; everything else is skipped in one regex step.
_SCAN_STOP = re.compile(r'[{}"\\]')
_STRING_STOP = re.compile(r'["\\]')

#: At most this many `{` positions are tried as object starts in one reply (bounds the work).
MAX_CANDIDATES = 512

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


def decode_reply(text: str, *, facet_names: Iterable[str] = DEFAULT_FACETS) -> Decoded:
    """Decode a judge's reply content into a `Verdict`, recording tolerated departures.

    Fast path: the stripped (and unfenced) text is exactly one verdict object. Otherwise every
    balanced `{...}` in the text is tried and the last one that decodes as a verdict wins.
    """
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


def _search(body: str, names: frozenset[str], tolerated: list[str], first_problem: str) -> Decoded:
    """Find the last verdict object among the JSON objects standing in `body`."""
    found: tuple[Verdict, bool, bool, int, int] | None = None
    objects = 0
    problem: str | None = None
    for start, end, value in _objects(body):
        objects += 1
        try:
            verdict, case_changed, facets_missing = _strict(value, names)
        except (msgspec.DecodeError, _Malformed) as exc:
            problem = _problem_of(exc)
            continue
        found = (verdict, case_changed, facets_missing, start, end)
    if found is None:
        if problem is None:
            problem = first_problem if body.startswith("{") else "no JSON object in the reply"
        return Decoded(None, tuple(tolerated), problem)
    verdict, case_changed, facets_missing, start, end = found
    rest = body[:start] + body[end:]
    if FENCE_MARK.search(rest) and "code_fence" not in tolerated:
        tolerated.append("code_fence")
    if FENCE_MARK.sub("", rest).strip():
        tolerated.append("surrounding_prose")
    if objects > 1:
        tolerated.append("several_objects")
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
    word = wire.verdict.lower()
    if word not in ("pass", "fail"):
        raise _Malformed(f"verdict must be pass or fail, got {_echo(wire.verdict)}")
    facets_missing = wire.facets is msgspec.UNSET
    facets = {} if facets_missing else wire.facets
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

    A `{` inside an object already yielded is not tried again; a `{` whose balanced span does not
    decode is skipped and scanning resumes at the next `{`. Quotes only count inside braces, so
    an apostrophe or a stray quote in prose does not blind the scanner.
    """
    position = body.find("{")
    tried = 0
    while position != -1 and tried < MAX_CANDIDATES:
        tried += 1
        end = _balanced_end(body, position)
        if end is not None:
            raw = body[position:end].encode()
            try:
                _any_decoder.decode(raw)
            except msgspec.DecodeError:
                pass
            else:
                yield position, end, raw
                position = body.find("{", end)
                continue
        position = body.find("{", position + 1)


def _balanced_end(body: str, start: int) -> int | None:
    """The index just past the `}` that closes the `{` at `start`, or None when it never closes."""
    depth = 0
    index = start
    length = len(body)
    while index < length:
        match = _SCAN_STOP.search(body, index)
        if match is None:
            return None
        char = match.group()
        index = match.end()
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index
        elif char == '"':
            index = _string_end(body, index)
            if index < 0:
                return None
        # a backslash outside a string is not JSON; the decoder will refuse the span
    return None


def _string_end(body: str, index: int) -> int:
    """The index just past the closing quote of a JSON string whose body starts at `index`."""
    while True:
        match = _STRING_STOP.search(body, index)
        if match is None:
            return -1
        if match.group() == '"':
            return match.end()
        index = match.end() + 1  # skip the escaped character

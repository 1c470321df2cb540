"""Decoding judge replies: each tolerated form, each malformed kind, and properties of the decoder."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabench_dsl.grading.verdict import Decoded, Verdict, decode_reply

OBJ = '{"verdict":"fail","reason":"Misses Compact","facets":{"missing_minor":false}}'
FAIL = Verdict("fail", "Misses Compact", {"missing_minor": False})


@pytest.mark.parametrize(
    ("text", "verdict", "tolerated"),
    [
        (OBJ, FAIL, ()),
        (f"  \n{OBJ}\n", FAIL, ("whitespace",)),
        (f"```json\n{OBJ}\n```", FAIL, ("code_fence",)),
        (f"```\n{OBJ}\n```", FAIL, ("code_fence",)),
        (f"```{OBJ}```", FAIL, ("code_fence",)),
        (f"\n```json\n{OBJ}\n```\n", FAIL, ("whitespace", "code_fence")),
        (f"Here is my judgment: {OBJ}", FAIL, ("surrounding_prose",)),
        (f"{OBJ}\nThe answer omits one stage.", FAIL, ("surrounding_prose",)),
        (f"Verdict below.\n```json\n{OBJ}\n```\nDone.", FAIL, ("code_fence", "surrounding_prose")),
        (
            '{"verdict":"pass","reason":"first thought"}\n' + OBJ,
            FAIL,
            ("several_objects",),
        ),
        (
            'Draft: {"verdict":"pass","reason":"x"} final: ' + OBJ + " (end)",
            FAIL,
            ("surrounding_prose", "several_objects"),
        ),
        (
            '{"verdict":"PASS","reason":"Matches the gold","facets":{}}',
            Verdict("pass", "Matches the gold", {}),
            ("verdict_case",),
        ),
        ('{"verdict":"Fail","reason":"Wrong","facets":{}}', Verdict("fail", "Wrong", {}), ("verdict_case",)),
        ('{"verdict":"pass","reason":"Correct"}', Verdict("pass", "Correct", {}), ("missing_facets",)),
        (
            '```json\n{"verdict":"PASS","reason":"ok"}\n```',
            Verdict("pass", "ok", {}),
            ("code_fence", "verdict_case", "missing_facets"),
        ),
        (
            '{"verdict":"pass","reason":"ok","facets":{"extra_correct_info":true,"erroneous_assertion":false}}',
            Verdict("pass", "ok", {"extra_correct_info": True, "erroneous_assertion": False}),
            (),
        ),
        # Braces and escaped quotes inside the reason do not confuse the scanner.
        (
            'Result: {"verdict":"fail","reason":"says \\"{x}\\" not }{","facets":{}} ok',
            Verdict("fail", 'says "{x}" not }{', {}),
            ("surrounding_prose",),
        ),
        # A later malformed object does not hide the earlier verdict: the last that DECODES wins.
        (OBJ + ' then {"verdict":"maybe","reason":"x"}', FAIL, ("surrounding_prose", "several_objects")),
        # Prose with a stray brace and quote before the object.
        ('I think {this is "odd, but: ' + OBJ, FAIL, ("surrounding_prose",)),
        ("It's the 5\" model. " + OBJ, FAIL, ("surrounding_prose",)),
        ('{"verdict":"fail","reason":""}', Verdict("fail", "", {}), ("missing_facets",)),
        # Text that is not JSON is prose, brackets and braces included.
        (f"[{OBJ}]", FAIL, ("surrounding_prose",)),
        (f"{{note: {OBJ}}}", FAIL, ("surrounding_prose",)),
    ],
)
def test_tolerated_forms(text: str, verdict: Verdict, tolerated: tuple[str, ...]) -> None:
    decoded = decode_reply(text)
    assert decoded == Decoded(verdict, tolerated, None)
    assert not decoded.malformed


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty reply"),
        ("   \n ", "empty reply"),
        ("The answer passes.", "no JSON object in the reply"),
        ("pass", "no JSON object in the reply"),
        ('["pass", "Correct"]', "no JSON object in the reply"),
        ("{verdict: pass, reason: ok}", "not valid JSON"),
        ('{"verdict":"pass","reason":"cut off', "not valid JSON"),
        ('{"verdict":"maybe","reason":"x"}', "verdict must be pass or fail, got 'maybe'"),
        ('{"verdict":" pass","reason":"x"}', "verdict must be pass or fail, got ' pass'"),
        ('{"verdict":"adjudicate","reason":"x"}', "verdict must be pass or fail, got 'adjudicate'"),
        ('{"verdict":true,"reason":"x"}', "verdict must be a string"),
        ('{"reason":"x","facets":{}}', "verdict missing"),
        ('{"verdict":"pass","facets":{}}', "reason missing"),
        ('{"verdict":"pass","reason":["a"]}', "reason must be a string"),
        ('{"verdict":"pass","reason":null}', "reason must be a string"),
        ('{"verdict":"pass","reason":"x","facets":[]}', "facets must be an object of booleans"),
        ('{"verdict":"pass","reason":"x","facets":null}', "facets must be an object of booleans"),
        (
            '{"verdict":"pass","reason":"x","facets":{"missing_minor":"yes"}}',
            "facets must be an object of booleans",
        ),
        ('{"verdict":"pass","reason":"x","facets":{"partial":true}}', "unknown facet 'partial'"),
        ('{"verdict":"pass","reason":"x","confidence":0.9}', "unknown key 'confidence'"),
        ('{"result":{"verdict":"pass","reason":"x"}}', "unknown key 'result'"),
        ('Here: {"verdict":"pass","reason":"x","score":1} done', "unknown key 'score'"),
        ('```json\n{"verdict":"pass"}\n```', "reason missing"),
        # A reply encoded twice: a JSON string that holds the object.
        (json.dumps(OBJ), "no JSON object in the reply"),
    ],
)
def test_malformed(text: str, problem: str) -> None:
    decoded = decode_reply(text)
    assert decoded.verdict is None
    assert decoded.malformed
    assert decoded.problem == problem


def test_problem_never_echoes_a_long_reply() -> None:
    decoded = decode_reply(json.dumps({"verdict": "x" * 5000, "reason": "r"}))
    assert decoded.verdict is None
    assert decoded.problem is not None and len(decoded.problem) <= 100


def test_facet_names_come_from_the_scorer() -> None:
    text = '{"verdict":"pass","reason":"ok","facets":{"cites_source":true}}'
    assert decode_reply(text).problem == "unknown facet 'cites_source'"
    decoded = decode_reply(text, facet_names=["cites_source"])
    assert decoded.verdict == Verdict("pass", "ok", {"cites_source": True})


def test_brace_floods_are_bounded_and_still_find_the_verdict() -> None:
    # One pass pairs the braces: a flood of open or close braces costs linear work.
    assert decode_reply("{" * 20000 + OBJ).verdict == FAIL
    assert decode_reply("}" * 20000 + OBJ).verdict == FAIL
    assert decode_reply('{"a":' * 5000 + OBJ).verdict == FAIL
    decoded = decode_reply("{" * 3000 + "}" * 3000)
    assert decoded.verdict is None and decoded.problem == "not valid JSON"


def test_too_deep_nesting_is_malformed_not_a_crash() -> None:
    # As deep as a reply within the size limit can be (a longer one is malformed for its size).
    deep = '{"verdict":"pass","reason":' + "[" * 32000 + "]" * 32000 + "}"
    decoded = decode_reply(deep)
    assert decoded.verdict is None
    assert decoded.problem in ("JSON nested too deeply", "reason must be a string")


@pytest.mark.parametrize(
    "prose",
    ['{oops "', '{he said "x} then ', 'a {"quoted', "{'single' \\ ", '"{"'],
)
def test_quotes_in_brace_prose_do_not_hide_the_verdict(prose: str) -> None:
    assert decode_reply(prose + OBJ).verdict == FAIL


# ---- properties -------------------------------------------------------------------------------

FACETS = ("extra_correct_info", "missing_minor", "erroneous_assertion")

verdicts = st.builds(
    Verdict,
    verdict=st.sampled_from(["pass", "fail"]),
    reason=st.text(max_size=60),
    facets=st.dictionaries(st.sampled_from(FACETS), st.booleans(), max_size=3),
)
#: Prose around a reply: any text without braces (a brace could open another object).
prose = st.text(alphabet=st.characters(blacklist_characters="{}`"), max_size=40)
space = st.text(alphabet=" \t\n\r", max_size=4)
fences = st.sampled_from(["", "```", "```json"])


@settings(derandomize=True, max_examples=150)
@given(verdict=verdicts, before=prose, after=prose, outer=space, fence=fences)
def test_noise_around_a_verdict_never_changes_it(
    verdict: Verdict, before: str, after: str, outer: str, fence: str
) -> None:
    body = msgspec.json.encode(verdict).decode()
    if fence:
        body = f"{fence}\n{body}\n```"
    text = f"{outer}{before}{body}{after}{outer}"
    decoded = decode_reply(text)
    assert decoded.verdict == verdict
    if (before + after).strip():
        assert "surrounding_prose" in decoded.tolerated
    if fence:
        assert "code_fence" in decoded.tolerated


@settings(derandomize=True, max_examples=100)
@given(first=verdicts, last=verdicts, between=prose)
def test_the_last_verdict_wins(first: Verdict, last: Verdict, between: str) -> None:
    text = msgspec.json.encode(first).decode() + between + msgspec.json.encode(last).decode()
    decoded = decode_reply(text)
    assert decoded.verdict == last
    assert "several_objects" in decoded.tolerated


@settings(derandomize=True, max_examples=300)
@given(st.text(max_size=200).filter(lambda t: "verdict" not in t.lower() and "\\" not in t))
def test_junk_is_never_a_verdict(text: str) -> None:
    decoded = decode_reply(text)
    assert decoded.verdict is None
    assert decoded.problem


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@settings(derandomize=True, max_examples=200)
@given(value=json_values, before=prose, after=prose)
def test_other_json_is_never_a_verdict(value: object, before: str, after: str) -> None:
    text = before + json.dumps(value) + after
    assert decode_reply(text).verdict is None


#: Ways to spoil a valid verdict object; each must make the reply malformed.
spoilers = st.sampled_from(
    [
        lambda d: {**d, "verdict": "maybe"},
        lambda d: {**d, "verdict": None},
        lambda d: {k: v for k, v in d.items() if k != "reason"},
        lambda d: {k: v for k, v in d.items() if k != "verdict"},
        lambda d: {**d, "reason": 1},
        lambda d: {**d, "facets": {"missing_minor": "true"}},
        lambda d: {**d, "facets": {"bogus": True}},
        lambda d: {**d, "extra": 1},
        lambda d: {"wrapped": d},
    ]
)


@settings(derandomize=True, max_examples=150)
@given(verdict=verdicts, spoil=spoilers, before=prose, after=prose)
def test_near_misses_are_never_a_verdict(verdict: Verdict, spoil, before: str, after: str) -> None:
    spoiled = spoil(msgspec.to_builtins(verdict))
    decoded = decode_reply(before + json.dumps(spoiled) + after)
    assert decoded.verdict is None
    assert decoded.problem


@settings(derandomize=True, max_examples=100)
@given(verdict=verdicts, upper=st.lists(st.booleans(), min_size=4, max_size=4))
def test_verdict_case_is_recorded_only_when_changed(verdict: Verdict, upper: list[bool]) -> None:
    word = "".join(c.upper() if u else c for c, u in zip(verdict.verdict, upper, strict=True))
    text = msgspec.json.encode({"verdict": word, "reason": verdict.reason, "facets": verdict.facets}).decode()
    decoded = decode_reply(text)
    assert decoded.verdict == verdict
    assert ("verdict_case" in decoded.tolerated) is (word != verdict.verdict)

"""The review pages' template environment: what a printed value becomes, what the sandbox refuses,
and that its shortcut for records decides exactly as the sandbox does."""

from __future__ import annotations

import base64
import hashlib

import pytest
from jinja2 import Undefined, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from support.make_results import make_record

from tabench_dsl.review.templating import csp_source, environment, inline

HOSTILE = "agent\u202e\"<b>&'\x1b[2J\nline two\ttab"


def printed(source: str, **values: object) -> str:
    return environment().from_string(source).render(**values)


def test_a_printed_value_is_shown_as_text_then_escaped() -> None:
    assert printed("{{ x }}", x=HOSTILE) == (
        "agent&lt;U+202E&gt;&#34;&lt;b&gt;&amp;&#39;\\x1b[2J\\nline two\\ttab"
    )


def test_lines_keeps_line_breaks_and_as_is_keeps_every_character() -> None:
    assert printed("{{ x|lines }}", x=HOSTILE) == (
        "agent&lt;U+202E&gt;&#34;&lt;b&gt;&amp;&#39;\\x1b[2J\nline two\ttab"
    )
    # For an attribute a script compares with the data: the text as it is, escaped all the same.
    assert printed('<option value="{{ x|as_is }}">', x=HOSTILE) == (
        '<option value="agent\u202e&#34;&lt;b&gt;&amp;&#39;\x1b[2J\nline two\ttab">'
    )


def test_numbers_and_markup_of_our_own_print_as_they_are() -> None:
    assert (
        printed(
            "{{ n }} {{ f }} {{ n|count }} {{ share|percent }} {{ none_share|percent }}",
            n=12345,
            f=0.5,
            share=0.875,
            none_share=None,
        )
        == "12345 0.5 12,345 87.5% –"
    )
    assert printed("{{ d|tojson }}", d={"a": "</script>"}) == '{"a": "\\u003c/script\\u003e"}'


def test_an_unknown_name_is_an_error_not_an_empty_string() -> None:
    with pytest.raises(UndefinedError):
        printed("{{ missing }}")


def test_the_sandbox_keeps_a_template_from_internals_and_from_changing_its_data() -> None:
    record = make_record("agent-a", "h01", "pass")
    for source in (
        "{{ r.__class__ }}",
        "{{ r.__struct_fields__ }}",
        "{{ r.attempts.append(1) }}",
        "{{ r.facets.update(x=1) }}",
        "{{ ''.__class__.__mro__ }}",
    ):
        with pytest.raises(SecurityError):
            printed(source, r=record)
    assert len(record.attempts) == 1


@pytest.mark.parametrize(
    "name",
    [
        "system",
        "answer",
        "decision",
        "attempts",
        "tokens",
        "key",
        "describe",
        "total",
        "kind",
        "__class__",
        "__struct_fields__",
        "_secret",
        "missing",
    ],
)
def test_the_shortcut_for_records_decides_as_the_sandbox_does(name: str) -> None:
    """Every attribute of a record, an attempt, its tokens and its judge: allowed or refused alike."""
    sandbox = ImmutableSandboxedEnvironment()
    record = make_record("agent-a", "h01", "pass")
    for obj in (record, record.attempts[0], record.attempts[0].tokens, record.judge):
        ours, theirs = environment().getattr(obj, name), sandbox.getattr(obj, name)
        if isinstance(theirs, Undefined):
            assert isinstance(ours, Undefined), (type(obj).__name__, name)
            assert ours._undefined_hint == theirs._undefined_hint  # "unsafe" or simply missing, alike
        elif callable(theirs):
            assert callable(ours) and ours() == theirs()
        else:
            assert ours == theirs


def test_an_inline_style_carries_the_policy_source_of_its_own_text() -> None:
    style = inline("report.css.j2", colours={"pass": "#1b7837"})
    digest = base64.b64encode(hashlib.sha256(style.text.encode("utf-8")).digest()).decode()
    assert style.source == csp_source(style.text) == f"'sha256-{digest}'"
    assert ".pass{background:#1b7837}" in style.text and "{{" not in style.text
    assert printed("<style>{{ s }}</style>", s=style) == f"<style>{style.text}</style>"
    script = inline("report.js")  # read as it is: a script is never parsed as a template
    assert script.text.startswith("(function(){") and printed("{{ s }}", s=script) == script.text

"""A scorer's settings (`scorer.yaml`), typed: what compile reads once and grading uses as is.

`language.scorer.read_settings` loads and checks the YAML (every problem at its own line and column);
the result travels inside the compiled battery, so `lint` and `compile` see every mistake and
grading never reads YAML again. Each section has a default, so a scorer names only what it
changes:

    name           the scorer's version name (default: its folder's name)
    templates      file names of the system, user and stern templates
    judge          default temperature and max_tokens of the judge call
    facets         the facet names a reply reports (and a rubric's `facet` lines may use)
    builtin        the section markers the builtin judge reads the prompt by
    contradiction  the phrase lists of the verdict/reason contradiction check, and its window
    injection      regular expressions that flag an answer as a suspected prompt injection
"""

from __future__ import annotations

import re

import msgspec

#: The facets of a scorer whose settings name none (tabench-1.1's): the one definition.
FACET_NAMES: tuple[str, ...] = ("extra_correct_info", "missing_minor", "erroneous_assertion")


class Templates(msgspec.Struct, frozen=True):
    """The scorer's template files, in its folder."""

    system: str = "system.j2"
    user: str = "user.j2"
    stern: str = "stern.j2"


class JudgeSettings(msgspec.Struct, frozen=True):
    """The scorer's defaults for the judge (the manifest's `judge:` and the flags override them)."""

    temperature: float | None = None
    max_tokens: int | None = None
    model: str | None = None
    backend: str | None = None


class Markers(msgspec.Struct, frozen=True):
    """The lines the builtin judge finds the question and the answer by, in the rendered prompts;
    tabench-1.1's by default."""

    question_start: str = "-- QUESTION + GOLD --"
    question_end: str = "-- FACET GUIDE (this question) --"
    answer_start: str = "-- CANDIDATE ANSWER --"


class ContradictionSettings(msgspec.Struct, frozen=True):
    """The contradiction check's phrase lists (regular expressions; `phrase_regex` is how a phrase
    of the first nine lists is matched) and how many words before a phrase a negator or qualifier
    reaches (`window`)."""

    pass_shaped: tuple[str, ...] = ()
    fail_shaped: tuple[str, ...] = ()
    negators: tuple[str, ...] = ()
    qualifiers: tuple[str, ...] = ()
    qualifiers_after: tuple[str, ...] = ()
    mitigators: tuple[str, ...] = ()
    contrast: tuple[str, ...] = ()
    concessive: tuple[str, ...] = ()
    neutral: tuple[str, ...] = ()
    window: int = 3
    #: True for the lists of a scorer shipped with tabench (installed, so trusted): they run on
    #: Python's `re`. A battery's own scorer's lists run with a time budget (`grading.timed_regex`).
    trusted: bool = False


class ScorerSettings(msgspec.Struct, frozen=True):
    """Everything `scorer.yaml` says, checked (see the module docstring)."""

    name: str | None = None
    templates: Templates = Templates()
    judge: JudgeSettings = JudgeSettings()
    facets: tuple[str, ...] = FACET_NAMES
    builtin: Markers = Markers()
    contradiction: ContradictionSettings = ContradictionSettings()
    injection: tuple[str, ...] = ()


#: The top-level sections of `scorer.yaml`, in the order they are documented.
SECTIONS: tuple[str, ...] = tuple(ScorerSettings.__struct_fields__)
#: The keys of each mapping section.
SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "templates": Templates.__struct_fields__,
    "judge": JudgeSettings.__struct_fields__,
    "builtin": Markers.__struct_fields__,
    # `trusted` is the loader's word that the scorer is a shipped one, never a scorer.yaml key: a
    # battery's own scorer saying it would run its phrase patterns without their time budget.
    "contradiction": tuple(f for f in ContradictionSettings.__struct_fields__ if f != "trusted"),
}
#: How the injection patterns are searched: case-insensitive, `^`/`$` at line boundaries.
INJECTION_FLAGS = re.IGNORECASE | re.MULTILINE


def phrase_regex(phrase: str) -> str:
    """The regular expression a contradiction phrase stands for: a run of spaces matches any run of
    white space (unless a quantifier follows it), so a phrase matches a reason broken across lines."""
    return re.sub(r" +(?![*+?{])", r"\\s+", phrase)

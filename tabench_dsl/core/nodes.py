"""The battery as data: frozen msgspec Structs, each with the source position it came from.

The parser builds the file-level nodes; `battery` validates them into `Question`s and a `Battery`.
Positions are 1-based (line, column) into the file at `path`, so every later error can point
at the exact place an author has to edit.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .closed_match import MatchCheck
from .price import Price
from .reasoning import DEFAULT_REASONING_TAGS
from .scorer import ScorerSettings
from .tiers import DEFAULT_T1_RULE

ExemplarKind = Literal["correct", "incorrect", "partial"]
Expect = Literal["pass", "fail"]

#: The exemplar kinds a rubric may use.
EXEMPLAR_KINDS: tuple[str, ...] = ("correct", "incorrect", "partial")


class Pos(msgspec.Struct, frozen=True):
    """A place in a source file: path, 1-based line and column."""

    path: str
    line: int
    col: int


class Rule(msgspec.Struct, frozen=True):
    """One S-rule of a policy file, its text as written (continuation lines joined by one space)."""

    text: str
    id: str | None
    pos: Pos


class Facet(msgspec.Struct, frozen=True):
    """One `facet NAME "text"` line of a question's facet guide."""

    name: str
    text: str
    pos: Pos


class Exemplar(msgspec.Struct, frozen=True):
    """A graded example answer. `expect` is the written `expect pass|fail`, None when omitted.
    A `holdout` exemplar (written with a trailing `holdout`) is never rendered into a prompt: it is
    what `calibrate` measures the judge on, an answer key the judge was not shown."""

    kind: ExemplarKind
    answer: str
    why: str
    pos: Pos
    expect: Expect | None = None
    holdout: bool = False

    @property
    def expected(self) -> Expect:
        """The verdict calibration expects: the written one, else pass for correct, fail otherwise."""
        if self.expect is not None:
            return self.expect
        return "pass" if self.kind == "correct" else "fail"


class Question(msgspec.Struct, frozen=True):
    """A validated question. Optional text fields are None when not given (or given empty)."""

    id: str
    prompt: str
    gold: str
    pos: Pos
    accept: tuple[str, ...] = ()
    trap: str | None = None
    structure: str | None = None
    scoring: str | None = None
    guide: str | None = None
    facets: tuple[Facet, ...] = ()
    exemplars: tuple[Exemplar, ...] = ()
    t1: bool = True
    #: Labels for slicing totals (`tags "a" "b"`); recorded with each graded answer, never rendered
    #: into a prompt.
    tags: tuple[str, ...] = ()
    #: The mechanical check of a closed answer (`match number 42`), run after T1; never rendered.
    match: MatchCheck | None = None
    #: Where each field was written (field name -> position of its keyword), for lint messages.
    field_pos: dict[str, Pos] = msgspec.field(default_factory=dict)


class PanelJudge(msgspec.Struct, frozen=True):
    """One judge of the manifest's `judge: {panel: [...]}`: its backend (required) and the values
    it sets for itself; what it leaves out comes from the `judge:` mapping around it."""

    backend: str
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    #: What this judge costs; None: the `judge:` mapping's price (panels mix providers and prices).
    price: Price | None = None


class JudgeReasoning(msgspec.Struct, frozen=True):
    """The manifest's `judge: {reasoning: ...}`: how much a reasoning judge may think. `effort` is
    OpenAI's `reasoning_effort` (minimal, low, medium or high); `budget_tokens` turns on
    Anthropic's extended thinking with that budget (then no temperature is sent, and `max_tokens`
    must be above the budget)."""

    effort: str | None = None
    budget_tokens: int | None = None


class JudgeDefaults(msgspec.Struct, frozen=True):
    """The manifest's `judge:` mapping; flags and the environment override it. `panel` lists the
    judges of a judge panel (empty: one judge) and `rule` how their votes combine (None: majority)."""

    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    backend: str | None = None
    panel: tuple[PanelJudge, ...] = ()
    rule: str | None = None
    #: What the judge costs (`judge: {price: ...}`), recorded on every record graded at it.
    price: Price | None = None
    #: Whether the judge's requests carry the provider's prompt-cache hint and answers are sent
    #: grouped by question (None: not said, which means on).
    prompt_cache: bool | None = None
    #: Whether the judge is sent the scorer's reply schema: "off", "auto" or "on" (None: not said,
    #: which means off; `--structured` overrides it).
    structured: str | None = None
    #: The reasoning controls (`judge: {reasoning: {effort: ..., budget_tokens: ...}}`), or None.
    reasoning: JudgeReasoning | None = None


class Scorer(msgspec.Struct, frozen=True):
    """A scorer version: its folder and its checked settings (templates are read by `render`)."""

    name: str
    path: str
    settings: ScorerSettings


class Battery(msgspec.Struct, frozen=True):
    """A whole battery: manifest values, its scorer, its S-rules and its questions in order."""

    name: str
    manifest: str
    scorer: Scorer
    policies: tuple[Rule, ...]
    questions: tuple[Question, ...]
    t1: bool = True
    judge: JudgeDefaults = JudgeDefaults()
    #: The manifest's `reasoning_tags`: the open/close pairs cut from answers before grading.
    reasoning_tags: tuple[tuple[str, str], ...] = DEFAULT_REASONING_TAGS
    #: The manifest's `t1_trap` (docs/language.md section 8.1).
    t1_trap: bool = True
    #: The manifest's T1 rule (`t1: {rule: v1}`; `tiers.T1_RULES`), `DEFAULT_T1_RULE` when unnamed.
    t1_rule: str = DEFAULT_T1_RULE

    def question(self, qid: str) -> Question | None:
        for q in self.questions:
            if q.id == qid:
                return q
        return None

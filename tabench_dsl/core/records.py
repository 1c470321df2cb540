"""The records grading writes and reads: one JSON line per graded answer, never rewritten.

A results file is append-only JSONL of `Record`s; where a (system, question) pair has several
records, the last stands. Human decisions on `adjudicate` records live beside it in
`RESULTS.decisions.jsonl` as `Decision`s. Field names here are the file format: change them only
with a migration.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .price import Price
from .reasoning import ReasoningInfo

#: Who decided: T1 (token subset), `match` (a question's mechanical check, `core.closed_match`) or
#: t2 (the judge, or a person for an oversized answer).
Tier = Literal["t1", "t2", "match"]
Outcome = Literal["pass", "fail", "adjudicate", "error"]
AttemptKind = Literal["first", "format", "stern"]
#: Why an answer ended in `adjudicate` or `error`.
Cause = Literal[
    "malformed",
    "contradiction",
    "transport",
    "rate_limit",
    "oversized",
    "panel_split",
    "truncated",
    "refusal",
    "missing",
    "unstable",
]
#: What each cause means, in the words every output shows it with (the terminal, the HTML report,
#: and the viewer's page, which the server hands them to).
CAUSE_TEXTS: dict[str, str] = {
    "contradiction": "the judge said fail with a reason that reads as a pass, again after the stern retry",
    "malformed": "the judge's reply could not be decoded as a verdict, even after one re-ask",
    "transport": "no usable reply could be had from the judge",
    "rate_limit": "the judge was still rate limiting when the wait allowed (--rate-limit-wait) was over",
    "oversized": "the answer is over the size limit (--max-answer-bytes) and was not sent to the judge",
    "panel_split": "the judges of the panel did not reach the verdict their rule asks for "
    "(a tie, no majority, or a disagreement under `unanimous`)",
    "truncated": "the judge's reply was cut off at its token budget, again with twice the budget "
    "(--max-tokens raises it)",
    "refusal": "the judge refused to grade the answer, again after one re-ask",
    "missing": "the system gave no answer to this question, counted as fail (--missing-as-fail)",
    "unstable": "the judge, asked about the same answer again (--repeat), did not give the same "
    "verdict each time",
}


class Tokens(msgspec.Struct, frozen=True):
    """Tokens a judge call used, as the server reported them (0 when it did not).

    `prompt` counts every input token, whether or not the provider served it from its prompt
    cache; `cached_prompt` is the part of `prompt` read from that cache (billed at the cached
    price) and `cache_write` the part written to it (Anthropic bills writing a cache entry apart).
    `reasoning` is the part of `completion` the model spent reasoning, where the server says
    (OpenAI's `completion_tokens_details.reasoning_tokens`); it is billed as `completion` is.
    Providers report these differently: each backend's decoder brings them to this one meaning.
    """

    prompt: int = 0
    completion: int = 0
    cached_prompt: int = 0
    cache_write: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.completion


class Served(msgspec.Struct, frozen=True, omit_defaults=True):
    """Who answered one attempt, as the provider's reply says: the model that served it (an alias
    such as `gpt-x` answers as a dated snapshot), the reply's id and OpenAI's `system_fingerprint`."""

    model: str | None = None
    response_id: str | None = None
    system_fingerprint: str | None = None


class Attempt(msgspec.Struct, frozen=True):
    """One judge attempt: the first ask, a format re-ask after a malformed reply, or the stern retry.

    `raw` is the reply content as the judge sent it (None when transport failed for good);
    `latency_ms` covers the successful HTTP exchange (0 on a cache hit); `transport_retries` counts
    the transport faults retried before this attempt got its reply; `error` says why it failed.

    What the server said about the reply beyond its text, when it said it: `stop` why a reply
    ended short of its own end (`length`: the token budget ran out; `refusal`; `tool_calls`;
    `content_filter`), `refusal` the text of a refusal, `max_tokens` the budget a cut-off reply and
    its re-ask had, and `served` which model answered (`Served`; None on a cache hit).
    """

    kind: AttemptKind
    raw: str | None
    latency_ms: float = 0.0
    tokens: Tokens = Tokens()
    cache_hit: bool = False
    transport_retries: int = 0
    error: str | None = None
    #: sha256 of the request messages, so `replay:` can find the reply for the same request.
    request_sha256: str | None = None
    stop: str | None = None
    refusal: str | None = None
    max_tokens: int | None = None
    served: Served | None = None


class JudgeInfo(msgspec.Struct, frozen=True):
    """Which judge graded: backend (builtin, openai, anthropic, replay, or a URL's host), model,
    and whether it is a language model. The builtin judge says so in every output.

    `endpoint` is the base URL an HTTP judge was asked at, without credentials, query or fragment
    (empty for the builtin and replay judges): two servers answering for one model are two judges.
    `price` is what the grading was told the judge costs (`--price` or the manifest's
    `judge.price`), None when nobody said: a results file prices its own tokens (`review.costs`).
    """

    backend: str
    model: str
    language_model: bool = True
    label: str = ""
    endpoint: str = ""
    price: Price | None = None

    @property
    def deterministic(self) -> bool:
        """True for a judge whose replies need no cache: one that is not a language model (builtin)
        or that serves recorded replies (replay). Both are local and give the same reply again."""
        return not self.language_model or self.backend == "replay"

    def describe(self) -> str:
        """The judge's name, the one every output shows (the terminal, totals, the report,
        calibration): `openai:gpt-x`; a judge that is not a language model is named by its label
        first, so it says so wherever its verdicts are shown."""
        name = f"{self.backend}:{self.model}"
        return name if self.language_model else f"{self.label or 'not a language model'}, {name}"


class Decision(msgspec.Struct, frozen=True):
    """A human verdict, appended to `RESULTS.decisions.jsonl`: one that settles an `adjudicate`
    record, or (`kind` "audit") a blind check of an answer the judge or T1 decided, which never
    changes the standing verdict (`review.audit`)."""

    system: str
    question: str
    verdict: Literal["pass", "fail"]
    prompt_sha256: str
    reviewer: str
    time: str
    note: str = ""
    #: "audit" for a blind audit; UNSET (absent from the line) for a decision that settles an
    #: adjudicate record, so such a line is written exactly as before audits existed.
    kind: Literal["audit"] | msgspec.UnsetType = msgspec.UNSET
    #: sha256 of the answer text an audit was made on (UNSET for settling decisions).
    answer_sha256: str | msgspec.UnsetType = msgspec.UNSET
    #: The chance the audit's draw had of drawing this answer, for a draw that favours some answers
    #: (`adjudicate --audit N --by uncertainty`); UNSET for a stratified draw, where every answer
    #: had the same chance (`review.validated` weights an audit by its inverse).
    inclusion_probability: float | msgspec.UnsetType = msgspec.UNSET

    @property
    def is_audit(self) -> bool:
        """True for a blind audit, False for a decision that settles an adjudicate record."""
        return self.kind == "audit"


class PanelVote(msgspec.Struct, frozen=True):
    """What one judge of a panel made of an answer, on its own: the whole grading (format re-ask,
    stern retry, its own adjudicate) as a single judge would record it. `verdict` is that judge's
    outcome (pass, fail, adjudicate or error) and `cause` why, for the last two."""

    judge: JudgeInfo
    verdict: Outcome
    reason: str
    cause: Cause | None = None
    facets: dict[str, bool] = msgspec.field(default_factory=dict)
    attempts: list[Attempt] = msgspec.field(default_factory=list)
    tolerated: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)


class Audit(msgspec.Struct, frozen=True):
    """The judge's verdict on a T1 pass sent to it by `--t1-audit`. The T1 pass stands; this is
    kept so totals can say how often the judge agrees with T1. With a panel, `verdict` is the
    panel's and `panel` holds each judge's vote."""

    verdict: Outcome
    reason: str
    judge: JudgeInfo
    cause: Cause | None = None
    attempts: list[Attempt] = msgspec.field(default_factory=list)
    panel: list[PanelVote] = msgspec.field(default_factory=list)


class Record(msgspec.Struct, omit_defaults=False):
    """One graded answer.

    `verdict` is the tool's outcome: the judge's pass/fail, or adjudicate / error. `cause` says why
    an answer is adjudicate (`malformed`, `contradiction`, `oversized`) or error (`transport`).
    `tolerated` lists the reply forms accepted on the way (fences, prose, letter case, missing
    facets); `warnings` holds observations such as a pass with a fail-shaped reason.
    A judge panel's record names the panel in `judge`, has no attempts of its own and lists each
    judge's vote in `panel`; a T1 pass `--t1-audit` sent to the judge keeps its verdict in `audit`.
    """

    system: str
    question: str
    tier: Tier
    verdict: Outcome
    reason: str
    prompt_sha256: str
    judge: JudgeInfo
    answer: str = ""
    facets: dict[str, bool] = msgspec.field(default_factory=dict)
    cause: Cause | None = None
    attempts: list[Attempt] = msgspec.field(default_factory=list)
    tolerated: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)
    injection_suspect: bool = False
    battery: str = ""
    time: str = ""
    #: The question's `tags` when it was graded (the rubric's `tags` field), so totals, the viewer
    #: and the report can slice a results file without its battery.
    tags: list[str] = msgspec.field(default_factory=list)
    #: A human's decision on this record, set when decisions are applied (never written by grade).
    decision: Decision | None = None
    #: Each judge's vote when a panel graded (`judge` then names the panel). UNSET, and so absent
    #: from the line, for a single judge: such a record is written exactly as before panels were.
    panel: list[PanelVote] | msgspec.UnsetType = msgspec.UNSET
    #: The judge's verdict on a T1 pass chosen by `--t1-audit`; absent from every other record.
    audit: Audit | msgspec.UnsetType = msgspec.UNSET
    #: The T1 rule that passed a T1 record (`tiers.T1_RULES`); absent from every other record. A T1
    #: record without it was written before rules had names, by rule v1.
    t1_rule: str | msgspec.UnsetType = msgspec.UNSET
    #: What was cut from `answer` before grading (its reasoning blocks, `core.reasoning`), with the
    #: final answer T1 and the judge graded; absent when nothing was cut.
    reasoning: ReasoningInfo | msgspec.UnsetType = msgspec.UNSET
    #: A person's blind audit of this record's verdict, set when decisions are applied (never
    #: written by grade); the verdict stands whatever the audit says (`review.audit`).
    human_audit: Decision | msgspec.UnsetType = msgspec.UNSET
    #: Every reviewer's blind audit of this record when two or more people audited it (set when
    #: decisions are applied, never written by grade); `human_audit` is then their consensus, UNSET
    #: when they disagree (`review.audit`).
    reviewer_audits: list[Decision] | msgspec.UnsetType = msgspec.UNSET
    #: Each of the judge's asks when `--repeat K` asked it K times (each as a panel vote of that one
    #: judge: verdict, reason, attempts); the record's own attempts are then in these. UNSET, and
    #: absent from the line, for an answer asked once.
    repeats: list[PanelVote] | msgspec.UnsetType = msgspec.UNSET
    #: What a `match` check read in the answer (its final number, its chosen letter, the text its
    #: pattern matched) when the check decided (tier `match`); absent from every other record.
    match_read: str | msgspec.UnsetType | None = msgspec.UNSET
    #: The scorer (its version name, `tabench-neutral-1.1`) whose rules and reply contract graded
    #: this record, so `grade --resume` can refuse to mix two scorers' verdicts in one file
    #: (`store.resume_checks`). UNSET, and absent from the line, in records written before records
    #: named it, and in those no scorer decided (a missing answer's fail).
    scorer: str | msgspec.UnsetType = msgspec.UNSET

    @property
    def key(self) -> tuple[str, str]:
        return (self.system, self.question)

    @property
    def votes(self) -> list[PanelVote]:
        """The panel's votes, empty for a record graded by one judge."""
        return [] if isinstance(self.panel, msgspec.UnsetType) else self.panel

    @property
    def audited(self) -> Audit | None:
        """The T1 audit's verdict, None for a record no audit looked at."""
        return None if isinstance(self.audit, msgspec.UnsetType) else self.audit

    @property
    def graded_answer(self) -> str:
        """The answer as T1 and the judge read it: `answer` with its reasoning blocks cut."""
        return self.answer if isinstance(self.reasoning, msgspec.UnsetType) else self.reasoning.final

    @property
    def reasoning_cut(self) -> ReasoningInfo | None:
        """What was cut from the answer before grading, None when nothing was."""
        return None if isinstance(self.reasoning, msgspec.UnsetType) else self.reasoning

    @property
    def audited_by_human(self) -> Decision | None:
        """The blind audit applied to this record, None when no person audited it."""
        return None if isinstance(self.human_audit, msgspec.UnsetType) else self.human_audit

    @property
    def audits_by_reviewers(self) -> list[Decision]:
        """Each reviewer's blind audit of this record: one per person, empty when none audited it."""
        if not isinstance(self.reviewer_audits, msgspec.UnsetType):
            return self.reviewer_audits
        return [] if isinstance(self.human_audit, msgspec.UnsetType) else [self.human_audit]

    @property
    def repetitions(self) -> list[PanelVote]:
        """The judge's repeated asks (`--repeat`), empty for an answer asked once."""
        return [] if isinstance(self.repeats, msgspec.UnsetType) else self.repeats

    def all_attempts(self) -> list[Attempt]:
        """Every judge attempt this record holds: its own, each panel judge's, each repeat's and the
        audit's (and its panel's), for counting calls, cache hits and tokens."""
        found = list(self.attempts)
        for vote in (*self.votes, *self.repetitions):
            found.extend(vote.attempts)
        audit = self.audited
        if audit is not None:
            found.extend(audit.attempts)
            for vote in audit.panel:
                found.extend(vote.attempts)
        return found


class Answer(msgspec.Struct, frozen=True):
    """One line of an answers file."""

    system: str
    question: str
    answer: str


record_encoder = msgspec.json.Encoder()
record_decoder = msgspec.json.Decoder(Record)
decision_decoder = msgspec.json.Decoder(Decision)

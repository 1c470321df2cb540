"""The viewer's in-memory index: filter and page the standing records, detail one, decide one.

Built once at start from a `Run` (100,000 records index in well under a second); each query is one
pass over a list of small summary rows, and the last filtered list is kept so paging through it
does not filter again. A decision appends to the decisions file first, then updates the index.
`view --compare` uses it; a plain `view` uses `disk_index.DiskIndex`, the same queries over
integer columns with the records left in the results file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ...core.errors import UsageError
from ...core.records import Record
from ...store.decisions import append_decision
from ..audit import draw_audit_sample
from ..costs import format_usd
from ..decisions import make_decision
from ..diff import diff_records, summary_lines
from ..outcomes import outcome
from ..totals import SystemTotals, Totals, compute_totals
from ..totals_tables import panel_caption, t1_audit_caption, usage_caption
from .charts import outcome_chart
from .disk_records import Positions, RecordsOnDisk
from .question_key import question_key
from .run import Run, prompts_for

#: The query-string keys `/api/records` filters on. `tag` is a rubric tag the record carries;
#: `compared` ("flipped" | "same" | "missing") sets it beside the second grading of `view --compare`.
FILTER_KEYS: tuple[str, ...] = (
    "verdict",
    "tier",
    "cause",
    "system",
    "question",
    "facet",
    "human",
    "audit",
    "q",
    "tag",
    "compared",
)
#: The values of the `audit` filter: T1 passes the judge audited, and of those the ones it agreed
#: with (passed) or disagreed with (failed).
AUDIT_FILTERS: tuple[str, ...] = ("audited", "agree", "disagree")
#: Largest page a client may ask for.
MAX_LIMIT = 500
_PREVIEW = 160


@dataclass(frozen=True)
class Filters:
    """One value per filter; an empty string means "any". `q` is a case-blind text search."""

    verdict: str = ""
    tier: str = ""
    cause: str = ""
    system: str = ""
    question: str = ""
    facet: str = ""
    human: str = ""  # "decided" | "undecided" | ""
    audit: str = ""  # one of AUDIT_FILTERS, or ""
    q: str = ""
    tag: str = ""
    compared: str = ""  # "flipped" | "same" | "missing" | ""

    @classmethod
    def from_query(cls, query: Any) -> Filters:
        """From a mapping of query-string values (unknown keys ignored)."""
        return cls(**{k: str(query.get(k, "")).strip() for k in FILTER_KEYS})


def _check_paging(offset: int, limit: int) -> None:
    if offset < 0 or not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"offset must be >= 0 and limit within 1..{MAX_LIMIT}")


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def _system_rows(rows: list[SystemTotals]) -> list[dict[str, Any]]:
    """Per-system totals as plain data, each with its cost worded as every output words it."""
    items = msgspec.to_builtins(rows)
    for item, row in zip(items, rows, strict=True):
        item["cost_text"] = format_usd(row.cost_usd, missing="–")
    return items


class Index:
    """The records of a run, ready to filter, page, show and decide."""

    def __init__(self, run: Run, *, reviewer: str | None = None, compare: Run | None = None) -> None:
        self.run = run
        self.reviewer = reviewer
        #: The second grading (`view --compare`): its standing records by pair, and what changed.
        self.compare = compare
        self.other: dict[tuple[str, str], Record] = (
            {} if compare is None else {r.key: r for r in compare.records}
        )
        self.records: list[Record] | RecordsOnDisk = run.records
        self.position: dict[tuple[str, str], int] | Positions = {r.key: i for i, r in enumerate(self.records)}
        self._search = [f"{r.answer}\n{r.reason}".casefold() for r in self.records]
        self._cache: tuple[Filters, Sequence[int]] | None = None
        self._totals: Totals | None = None
        self._choices: dict[str, list[str]] | None = None

    # -- what the page shows ---------------------------------------------------------------------
    def totals(self) -> Totals:
        """The totals of the standing records, human decisions counted (recomputed after a decision)."""
        if self._totals is None:
            self._totals = compute_totals(self.records, price=self.run.price)
        return self._totals

    def totals_payload(self) -> dict[str, Any]:
        """Totals as plain data, with both charts as data (`charts.Chart`) the page draws: no markup
        is ever built from a name on the server and parsed in the browser."""
        totals = self.totals()
        # Each question's row is encoded as it is (a struct encodes as its plain data does): at ten
        # million records there can be 200,000 of them, not worth a dict each.
        payload = msgspec.to_builtins(msgspec.structs.replace(totals, questions=[]))
        payload["questions"] = totals.questions
        payload["systems"] = _system_rows(totals.systems)
        # Each judge named as every other output names it (`JudgeInfo.describe`): the page shows
        # these, it does not compose a name of its own.
        payload["judge_names"] = [judge.describe() for judge in totals.judges]
        payload["compared"] = self.compared_payload()
        payload["usage_text"] = usage_caption(totals)  # worded as the terminal and the report word it
        # The panel's agreement and T1's precision, each worded as the terminal's totals word it.
        payload["agreement_lines"] = [
            *([] if totals.panel is None else [panel_caption(totals.panel)]),
            *([] if totals.t1_audit is None else [t1_audit_caption(totals.t1_audit)]),
        ]
        payload["awaiting"] = self.awaiting()
        payload["charts"] = msgspec.to_builtins(
            {
                "systems": outcome_chart(totals.systems, title="Outcomes per system", kind="system"),
                "questions": outcome_chart(totals.questions, title="Outcomes per question", kind="question"),
            }
        )
        return payload

    def awaiting(self) -> int:
        """How many answers await a person's decision: `adjudicate` and not yet decided."""
        return sum(1 for r in self.records if r.verdict == "adjudicate" and r.decision is None)

    def meta(self) -> dict[str, Any]:
        """What the filters can choose from, and what the page must warn about."""
        run = self.run
        if self._choices is None:  # decisions never change these: compute them once
            self._choices = self.filter_choices()
        return {
            "results": str(run.results_path),
            "decisions": str(run.decisions_path),
            "reviewer": self.reviewer,
            "battery": None
            if run.compiled is None
            else {"name": run.compiled.name, "scorer": run.compiled.scorer, "path": str(run.battery_path)},
            "records": len(self.records),
            "compare": None if self.compare is None else str(self.compare.results_path),
            **self._choices,
            "problems": run.problems[:20],
            "problem_count": len(run.problems),
            "stale": [
                {
                    "system": s.decision.system,
                    "question": s.decision.question,
                    "verdict": s.decision.verdict,
                    "reviewer": s.decision.reviewer,
                    "reason": s.reason,
                }
                for s in run.stale
            ],
        }

    def filter_choices(self) -> dict[str, list[str]]:
        """The values each list filter can choose from, as the records hold them."""
        return {
            "systems": sorted({r.system for r in self.records}),
            "questions": sorted({r.question for r in self.records}),
            "facets": sorted({name for r in self.records for name, seen in r.facets.items() if seen}),
            "causes": sorted({r.cause for r in self.records if r.cause}),
            "tags": sorted({tag for r in self.records for tag in r.tags}),
        }

    # -- queries ---------------------------------------------------------------------------------
    def matching(self, f: Filters) -> Sequence[int]:
        """Positions of the records that pass every filter, in index order."""
        if self._cache is not None and self._cache[0] == f:
            return self._cache[1]
        q = f.q.casefold()
        out = []
        for i, r in enumerate(self.records):
            if f.verdict and r.verdict != f.verdict:
                continue
            if f.tier and r.tier != f.tier:
                continue
            if f.cause and r.cause != f.cause:
                continue
            if f.system and r.system != f.system:
                continue
            if f.question and r.question != f.question:
                continue
            if f.facet and not r.facets.get(f.facet):
                continue
            if f.human == "decided" and r.decision is None:
                continue
            if f.human == "undecided" and r.decision is not None:
                continue
            if f.audit and not audit_matches(r, f.audit):
                continue
            if q and q not in self._search[i]:
                continue
            if f.tag and f.tag not in r.tags:
                continue
            if f.compared and self.compared_state(r) != f.compared:
                continue
            out.append(i)
        self._cache = (f, out)
        return out

    def page(self, f: Filters, offset: int = 0, limit: int = 50) -> dict[str, Any]:
        """One page of summaries of the matching records, and how many match in all."""
        _check_paging(offset, limit)
        hits = self.matching(f)
        items = [self.summary(self.records[i]) for i in hits[offset : offset + limit]]
        return {"total": len(hits), "offset": offset, "limit": limit, "items": items}

    def systems_page(self, q: str = "", offset: int = 0, limit: int = 50) -> dict[str, Any]:
        """One page of the per-system totals whose name holds `q` (case-blind), in the totals' order,
        and how many match in all: the page's totals table, paged and searched as the answers list
        is, so a run of 4,000 systems is not one table of 4,000 rows."""
        _check_paging(offset, limit)
        needle = q.strip().casefold()
        systems = self.totals().systems
        hits = [s for s in systems if needle in s.system.casefold()] if needle else systems
        items = _system_rows(hits[offset : offset + limit])
        return {"total": len(hits), "offset": offset, "limit": limit, "items": items}

    def summary(self, r: Record) -> dict[str, Any]:
        """The one-line view of a record the list shows."""
        return {
            "system": r.system,
            "question": r.question,
            "verdict": r.verdict,
            "tier": r.tier,
            "cause": r.cause,
            "reason": _preview(r.reason),
            "answer": _preview(r.graded_answer),
            "facets": [name for name, seen in r.facets.items() if seen],
            "human": None if r.decision is None else r.decision.verdict,
            "warnings": len(r.warnings),
            "injection_suspect": r.injection_suspect,
            "prompt_sha256": r.prompt_sha256,
            "votes": [vote.verdict for vote in r.votes],
            "audit": None if r.audited is None else r.audited.verdict,
            "tags": r.tags,
            "compared": None if self.compare is None else self.compared_record(r, preview=True),
        }

    # -- a second grading (`view --compare`) ------------------------------------------------------
    def compared_state(self, record: Record) -> str:
        """ "flipped" (the second grading's outcome differs), "same", or "missing" (not graded there)."""
        other = self.other.get(record.key)
        if other is None:
            return "missing"
        return "same" if outcome(other) == outcome(record) else "flipped"

    def compared_record(self, record: Record, *, preview: bool = False) -> dict[str, Any] | None:
        """The second grading's verdict on `record`'s pair, for its detail (its reason whole) or its
        line in the list (`preview`: the reason cut short)."""
        other = self.other.get(record.key)
        if other is None:
            return None
        return {
            "verdict": other.verdict,
            "human": None if other.decision is None else other.decision.verdict,
            "reason": _preview(other.reason) if preview else other.reason,
            "judge_name": other.judge.describe(),
        }

    def compared_payload(self) -> dict[str, Any] | None:
        """What changed from this grading to the second (`diff.Diff`, flips left out: the list
        filters them), None without a second grading. Recomputed: a decision here changes it."""
        if self.compare is None:
            return None
        diff = diff_records(
            self.records,
            self.compare.records,
            a_name=str(self.run.results_path),
            b_name=str(self.compare.results_path),
        )
        payload = msgspec.to_builtins(diff)
        payload["flips"] = len(diff.flips)
        payload["only_in_a"], payload["only_in_b"] = len(diff.only_in_a), len(diff.only_in_b)
        payload["lines"] = summary_lines(diff)
        return payload

    def find(self, system: str, question: str) -> Record:
        """The standing record of a pair; `KeyError` when there is none."""
        return self.records[self.position[(system, question)]]

    def detail(self, system: str, question: str) -> dict[str, Any]:
        """Everything about one record: the full record and the prompts its judge saw."""
        record = self.find(system, question)
        prompts = prompts_for(record, self.run.compiled)
        return {
            "record": msgspec.to_builtins(record),
            "judge_name": record.judge.describe(),
            # The answer T1 and the judge read, and what was cut from it (None: nothing).
            "final_answer": record.graded_answer,
            "reasoning": reasoning_payload(record),
            # Each panel judge's vote, and the T1 audit's verdict, named as every output names them.
            "votes": votes_payload(record.votes),
            "audit": None
            if record.audited is None
            else {
                "judge_name": record.audited.judge.describe(),
                "verdict": record.audited.verdict,
                "cause": record.audited.cause,
                "reason": record.audited.reason,
                "votes": votes_payload(record.audited.panel),
            },
            "compared": None if self.compare is None else self.compared_record(record),
            # The gold, accepted variants, trap and scoring text the decision panel shows.
            "key": msgspec.to_builtins(question_key(record, self.run.compiled)),
            "prompts": {
                "system": prompts.system,
                "user": prompts.user,
                "stern": prompts.stern,
                "recorded_sha256": prompts.recorded_sha256,
                "battery_sha256": prompts.battery_sha256,
                "drift": prompts.drift,
            },
        }

    def audit_sample(self, n: int, seed: int) -> list[Record]:
        """`n` decided answers drawn for a blind audit, as `tabench adjudicate --audit` draws them."""
        return draw_audit_sample(self.records, n, seed=seed)

    # -- adjudication ----------------------------------------------------------------------------
    def decide(
        self, system: str, question: str, verdict: str, *, note: str = "", prompt_sha256: str | None = None
    ) -> Record:
        """Record a human verdict on an `adjudicate` record: append it to disk, then update the index.

        `prompt_sha256`, when given, must match the record's (the page was showing that prompt).
        """
        record = self.find(system, question)
        if record.verdict != "adjudicate":
            raise UsageError(f"{system}/{question} is {record.verdict}, not adjudicate")
        if prompt_sha256 is not None and prompt_sha256 != record.prompt_sha256:
            raise UsageError(f"{system}/{question}: the record's prompt hash differs from the page's")
        decision = make_decision(record, verdict, reviewer=self.reviewer, note=note)
        append_decision(self.run.decisions_path, decision)
        updated = msgspec.structs.replace(record, decision=decision)
        self.records[self.position[record.key]] = updated
        self._cache = None
        self._totals = None
        return updated

    def record_audit(self, system: str, question: str, verdict: str, *, note: str = "") -> Record:
        """Record a person's blind audit of a decided record (`review.audit`): append it to disk,
        then set it on the record in the index; the verdict stands."""
        record = self.find(system, question)
        if record.verdict not in ("pass", "fail"):
            raise UsageError(f"{system}/{question} is {record.verdict}: only a decided answer is audited")
        audit = make_decision(record, verdict, reviewer=self.reviewer, note=note, audit=True)
        append_decision(self.run.decisions_path, audit)
        updated = msgspec.structs.replace(record, human_audit=audit)
        self.records[self.position[record.key]] = updated
        self._cache = None
        self._totals = None
        return updated


def audit_matches(record: Record, wanted: str) -> bool:
    """Whether `record` passes the `audit` filter: `audited` (a T1 pass the judge also graded),
    `agree` (the judge passed it too) or `disagree` (the judge failed it)."""
    audit = record.audited
    if audit is None:
        return False
    if wanted == "agree":
        return audit.verdict == "pass"
    if wanted == "disagree":
        return audit.verdict == "fail"
    return True


def votes_payload(votes) -> list[dict[str, Any]]:
    """A panel's votes as the page shows them: each judge's name, outcome, cause, reason, attempts."""
    return [
        {
            "judge_name": vote.judge.describe(),
            "verdict": vote.verdict,
            "cause": vote.cause,
            "reason": vote.reason,
            "attempts": msgspec.to_builtins(vote.attempts),
        }
        for vote in votes
    ]


def reasoning_payload(record: Record) -> dict[str, Any] | None:
    """What was cut from `record`'s answer before grading, as the page unfolds it: the counts, the
    line that words them, and the reasoning text itself; None when nothing was cut."""
    cut = record.reasoning_cut
    if cut is None:
        return None
    return {
        "blocks": cut.blocks,
        "characters": cut.characters,
        "unclosed": cut.unclosed,
        "line": cut.describe(),
        "text": cut.reasoning_of(record.answer),
    }

"""Realistic results files for tests of the viewer, the report and adjudication.

Records are built with `records.Record` exactly as grading writes them: T1 passes with no attempt,
judge passes and fails with their raw JSON replies, `adjudicate` records after a malformed reply or
a contradiction (with the stern retry), and `error` records after transport failures.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import msgspec

from tabench_dsl.core.records import Attempt, Decision, JudgeInfo, Record, Tokens, record_encoder

JUDGE = JudgeInfo(backend="openai", model="test-judge-7b", language_model=True)
#: An answer that is HTML and script: every page must show it as text.
HOSTILE_ANSWER = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>&amp; </pre>'


def sha(text: str) -> str:
    """The sha256 hex of `text`, as prompts are hashed."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def reply(verdict: str, reason: str, **facets: bool) -> str:
    """A judge's raw reply in the scorer's JSON shape."""
    return json.dumps({"verdict": verdict, "reason": reason, "facets": facets})


def make_record(
    system: str,
    question: str,
    outcome: str,
    *,
    answer: str = "Ingest, Index, Recall, Compact.",
    prompt_sha256: str | None = None,
    cause: str | None = None,
    facets: dict[str, bool] | None = None,
    battery: str = "memos-agent",
) -> Record:
    """One record with the attempts an answer with this outcome has.

    `outcome` is pass, fail, adjudicate, error or t1 (a T1 pass, no judge call).
    """
    prompt_sha256 = prompt_sha256 or sha(f"SYSTEM for {question}")
    common = dict(
        system=system,
        question=question,
        prompt_sha256=prompt_sha256,
        judge=JUDGE,
        answer=answer,
        battery=battery,
        time="2026-11-29T12:00:00Z",
    )
    tok = Tokens(prompt=812, completion=41)
    if outcome == "t1":
        # Named as `grade` names it today: the default rule (a record naming none is v1's).
        reason = "T1: gold tokens found in the answer"
        return Record(tier="t1", verdict="pass", reason=reason, t1_rule="v2", **common)
    if outcome == "pass":
        raw = reply("pass", "Names all four stages in order.", **(facets or {}))
        return Record(
            tier="t2",
            verdict="pass",
            reason="Names all four stages in order.",
            facets=facets or {},
            attempts=[Attempt("first", raw, 412.5, tok)],
            **common,
        )
    if outcome == "fail":
        raw = "```json\n" + reply("fail", "Claims a Summarize stage.", erroneous_assertion=True) + "\n```"
        return Record(
            tier="t2",
            verdict="fail",
            reason="Claims a Summarize stage.",
            facets=facets or {"erroneous_assertion": True},
            tolerated=["code fence"],
            attempts=[Attempt("first", raw, 380.0, tok)],
            **common,
        )
    if outcome == "adjudicate":
        if (cause or "contradiction") == "malformed":
            attempts = [
                Attempt("first", "The answer looks fine to me.", 300.0, tok),
                Attempt("format", "verdict: pass??", 290.0, tok),
            ]
            return Record(
                tier="t2",
                verdict="adjudicate",
                reason="no verdict in the reply",
                cause="malformed",
                attempts=attempts,
                **common,
            )
        first = reply("fail", "The answer is correct and matches the gold.")
        attempts = [
            Attempt("first", first, 350.0, tok),
            Attempt("stern", reply("fail", "Accurate: equivalent to the gold."), 360.0, tok),
        ]
        return Record(
            tier="t2",
            verdict="adjudicate",
            reason="Accurate: equivalent to the gold.",
            cause="contradiction",
            attempts=attempts,
            **common,
        )
    if outcome == "error":
        attempts = [Attempt("first", None, 0.0, transport_retries=5, error="HTTP 503 after 6 attempts")]
        return Record(
            tier="t2",
            verdict="error",
            reason="transport failed",
            cause="transport",
            attempts=attempts,
            **common,
        )
    raise ValueError(outcome)


def decision_on(record: Record, verdict: str, *, note: str = "", **extra) -> Decision:
    """A person's decision on `record`'s pair by reviewer "ann", as `tabench view` would append it."""
    return Decision(
        record.system,
        record.question,
        verdict,
        record.prompt_sha256,
        "ann",
        "2026-12-01T00:00:00Z",
        note,
        **extra,
    )


def write_results(path: Path, records: list[Record]) -> Path:
    """Write `records` as a results file (one JSON line each) and return its path."""
    with open(path, "wb") as f:
        for record in records:
            f.write(record_encoder.encode(record) + b"\n")
    return path


def small_results() -> list[Record]:
    """Two systems, four questions, every outcome, a re-graded pair and a hostile answer."""
    return [
        make_record("agent-a", "h01", "t1"),
        make_record("agent-a", "h02", "pass", facets={"missing_minor": True}),
        make_record("agent-a", "h03", "error"),  # re-graded below: the last record stands
        make_record("agent-a", "h03", "fail"),
        make_record("agent-a", "h04", "adjudicate", answer=HOSTILE_ANSWER),
        make_record("agent-b", "h01", "pass"),
        make_record("agent-b", "h02", "adjudicate", cause="malformed"),
        make_record("agent-b", "h03", "error"),
        make_record("agent-b", "h04", "fail"),
    ]


def many_results(n: int, *, seed: int = 7, systems: int = 10) -> list[Record]:
    """`n` records over `systems` systems and n / systems questions, outcomes drawn with a seed."""
    rng = random.Random(seed)
    per_system = max(n // systems, 1)
    kinds = [
        ("t1", None),
        ("pass", None),
        ("pass", None),
        ("pass", None),
        ("fail", None),
        ("fail", None),
        ("adjudicate", "malformed"),
        ("adjudicate", "contradiction"),
        ("error", None),
    ]
    # One prototype per kind, copied with new names: building 100,000 records stays well under a second.
    protos = [make_record("proto", "proto", outcome, cause=cause) for outcome, cause in kinds]
    hashes = [sha(f"SYSTEM for q{q:05d}") for q in range(per_system)]
    out = []
    for s in range(systems):
        for q in range(per_system):
            proto = protos[rng.randrange(len(protos))]
            out.append(
                msgspec.structs.replace(
                    proto,
                    system=f"sys-{s:02d}",
                    question=f"q{q:05d}",
                    prompt_sha256=hashes[q],
                    answer=f"answer {s}/{q} " + "x" * rng.randrange(200),
                )
            )
    return out


BATTERY_YAML = """\
name: memos-agent
scorer: tabench-1.1
policies: [memos.policy]
rubrics: [memos.rubric]
"""
POLICY = "S1: Judge only what the answer says.\n"
RUBRIC = """\
question h01 {
  prompt "Where is the index kept?"
  gold "In SQLite"
}
question h02 {
  prompt "Which stages make up the memory pipeline?"
  gold "Four stages: Ingest, Index, Recall, Compact"
}
question h03 {
  prompt "What does Compact do?"
  gold "Merges old memories"
}
question h04 {
  prompt "Is there a <Summarize> stage?"
  gold "No <b>Summarize</b> stage exists"
}
"""


def write_battery(folder: Path) -> Path:
    """A four-question battery (h01..h04, named memos-agent) under the shipped tabench-1.1 scorer."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "battery.yaml").write_text(BATTERY_YAML, encoding="utf-8")
    (folder / "memos.policy").write_text(POLICY, encoding="utf-8")
    (folder / "memos.rubric").write_text(RUBRIC, encoding="utf-8")
    return folder

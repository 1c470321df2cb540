"""Human decisions on `adjudicate` records, kept beside the results they judge.

A results file `RUN.jsonl` is never rewritten; a person's verdict on one of its `adjudicate` records is
appended to `RUN.decisions.jsonl` as one `records.Decision` per line. Applying decisions pairs each
with the latest record of its (system, question): the last decision for a pair wins, provided it was
made on the same prompt (its `prompt_sha256` matches) and the record is still `adjudicate`. Any other
decision is stale: it is ignored and reported, so a re-graded or re-compiled answer is never judged
by a decision made on different text.
"""

from __future__ import annotations

import contextlib
import getpass
import io
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from ..core.errors import StorageError, UsageError
from ..core.jsonl import BadLine, decode_line, numbered_lines
from ..core.records import Decision, Record, decision_decoder, record_encoder
from ..core.redact import scrub, secrets_in
from ..core.results import repair_tail
from ..core.safe_open import open_for_append
from .audit import answer_sha256, attach_audits

#: The suffix that replaces `.jsonl` in a results file's name to name its decisions file.
DECISIONS_SUFFIX = ".decisions.jsonl"


class StaleDecision(msgspec.Struct, frozen=True):
    """A decision that was not applied, and why (no such record, prompt changed, not adjudicate)."""

    decision: Decision
    reason: str


def decisions_path(results_path: str | Path) -> Path:
    """`runs/x.jsonl` -> `runs/x.decisions.jsonl` (a name without `.jsonl` gets the suffix added)."""
    path = Path(results_path)
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.name
    return path.with_name(stem + DECISIONS_SUFFIX)


def load_decisions(path: str | Path) -> list[Decision]:
    """Every decision in the file, in written order; a missing file has none.

    A last line without its line break that does not decode is a write torn by a crash and is
    skipped; any other bad line raises `UsageError` naming `path:line:col` (a byte order mark is
    dropped, bad text is placed at its column: `jsonl.decode_line`).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UsageError(f"{path}: cannot read decisions: {exc.strerror}") from exc
    decisions: list[Decision] = []
    for number, line in numbered_lines(io.BytesIO(data)):
        try:
            decisions.append(decode_line(decision_decoder, line))
        except BadLine as bad:
            if not line.endswith(b"\n"):  # no line break after it: a torn final write
                break
            col = bad.col or decode_error_col(bad)
            raise UsageError(f"{path}:{number}:{col}: bad decision: {bad.message}") from None
    return decisions


def append_decision(path: str | Path, decision: Decision) -> None:
    """Append one decision as a JSON line and flush it to disk.

    A torn last line left by a crash is cut off first (`results.repair_tail`: a last line without
    its line break, or one that is not JSON), so the new line starts on a line of its own. A disk
    that refuses the line (full, an I/O error) gets its partial line taken back and raises
    `StorageError`: the decisions before it stay whole.
    """
    path = Path(path)
    line = record_encoder.encode(decision) + b"\n"
    if path.is_file():
        repair_tail(path)
    # Unbuffered, as `ResultsWriter` writes: a refused write leaves nothing in a buffer that closing
    # the file would try to write again after the partial line was taken back.
    fd = open_for_append(path, 0o666)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end)
            raise StorageError(
                f"{path}: cannot append the decision: {exc.strerror or exc}; the decisions before it are kept"
            ) from None
    finally:
        os.close(fd)


def apply_decisions(
    records: Iterable[Record],
    decisions: Iterable[Decision],
    *,
    stale: list[StaleDecision] | None = None,
) -> list[Record]:
    """The records, with `decision` set on the latest record of each decided pair.

    Records keep their order; only the latest record of a pair can carry a decision. The last
    decision for a pair wins when its prompt hash matches that record and the record is
    `adjudicate`; every decision not applied is appended to `stale` (when given) with the reason.
    Passing the result to `totals.compute_totals` counts decided records as human verdicts.
    Blind audits (`Decision.is_audit`) never settle a verdict: they are set on the records they
    check as `human_audit` (`audit.attach_audits`), for totals to measure the judge against.
    """
    records = list(records)
    decisions = list(decisions)
    audits = [decision for decision in decisions if decision.is_audit]  # never settle a verdict
    last_index: dict[tuple[str, str], int] = {}
    for i, record in enumerate(records):
        last_index[record.key] = i
    chosen: dict[tuple[str, str], Decision] = {}
    for decision in decisions:
        if decision.is_audit:
            continue
        key = (decision.system, decision.question)
        index = last_index.get(key)
        reason = _stale_reason(None if index is None else records[index], decision)
        if reason is not None:
            if stale is not None:
                stale.append(StaleDecision(decision, reason))
            continue
        if stale is not None and key in chosen:
            stale.append(StaleDecision(chosen[key], "replaced by a later decision"))
        chosen[key] = decision
    for key, decision in chosen.items():
        index = last_index[key]
        records[index] = msgspec.structs.replace(records[index], decision=decision)
    if not audits:
        return records
    records, stale_audits = attach_audits(records, audits)
    if stale is not None:
        stale.extend(StaleDecision(audit, reason) for audit, reason in stale_audits)
    return records


def make_decision(
    record: Record,
    verdict: str,
    *,
    reviewer: str | None = None,
    note: str = "",
    now: datetime | None = None,
    audit: bool = False,
    inclusion_probability: float | None = None,
) -> Decision:
    """A decision on `record` by `reviewer` (default: the login name), stamped with the UTC time.
    With `audit`, a blind audit (`"kind": "audit"`) carrying the sha256 of the answer it judged,
    and the chance its draw had of drawing it (`inclusion_probability`) for a draw that leaned.

    The note is free text a reviewer may paste anything into: it is scrubbed of keys (the values of
    the key variables in the environment and anything key-shaped) like every other text tabench
    writes."""
    if verdict not in ("pass", "fail"):
        raise UsageError(f"a decision is pass or fail, not {verdict!r}")
    stamp = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return Decision(
        system=record.system,
        question=record.question,
        verdict=verdict,  # type: ignore[arg-type]
        prompt_sha256=record.prompt_sha256,
        reviewer=scrub(reviewer or default_reviewer(), secrets_in(os.environ)),
        time=stamp,
        note=scrub(note.strip(), secrets_in(os.environ)),
        kind="audit" if audit else msgspec.UNSET,
        answer_sha256=answer_sha256(record) if audit else msgspec.UNSET,
        inclusion_probability=msgspec.UNSET if inclusion_probability is None else inclusion_probability,
    )


def default_reviewer() -> str:
    """The login name, or `unknown` where the platform cannot tell."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "unknown"


def decode_error_col(exc: Exception) -> int:
    """The 1-based column msgspec's `(byte N)` points at, or 1 when it names none."""
    text = str(exc)
    marker = "(byte "
    at = text.rfind(marker)
    if at < 0:
        return 1
    digits = text[at + len(marker) :].split(")", 1)[0]
    return int(digits) + 1 if digits.isdigit() else 1


def _stale_reason(record: Record | None, decision: Decision) -> str | None:
    if record is None:
        return "no such record in the results"
    if record.prompt_sha256 != decision.prompt_sha256:
        return "the prompt changed since the decision (sha256 differs)"
    if record.verdict != "adjudicate":
        return f"the record is no longer adjudicate (now {record.verdict})"
    return None

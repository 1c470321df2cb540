"""The prompt lock: `tabench.lock` beside a battery's manifest pins the sha256 of every SYSTEM prompt.

`tabench compile BATTERY --lock` writes it; `--check` compiles again and names every question whose
prompt drifted, was added or was removed since, so a change to a scorer template, a policy or a gold
key can never slip into a benchmark unnoticed. The file is JSON, one key per line, questions in
battery order, so a change to it reads well in a diff:

    {
     "lock": 1,
     "battery": "memos-agent",
     "scorer": "tabench-1.1",
     "questions": {
      "h01": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      ...
     },
     "lines": {
      "h01": "3b1a6f0e 9c2d44a1 ...",
      ...
     }
    }

`lines` (the short digest of each prompt line, `lock_lines`) lets `--check` show what changed in a
drifted prompt; a lock without it still checks, naming the drift only.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from ..core.compiled import CompiledBattery
from ..core.errors import UsageError
from ..core.safe_open import replacing
from .lock_lines import changed_lines, line_digests

#: The lock file's name; it sits in the battery folder, beside `battery.yaml`.
LOCK_NAME = "tabench.lock"

#: The format version written in every lock file.
LOCK_VERSION = 1


class Lock(msgspec.Struct, frozen=True):
    """A lock file's contents: question id -> hex sha256 of its SYSTEM prompt, in battery order."""

    battery: str
    scorer: str
    questions: dict[str, str]
    #: Question id -> the short digests of its prompt's lines (`lock_lines`); empty in a lock
    #: written before they were kept.
    lines: dict[str, str] = msgspec.field(default_factory=dict)


class Drift(msgspec.Struct, frozen=True):
    """One difference between a lock and the battery as it compiles now.

    `kind` is "changed" (the prompt's hash differs), "added" (not in the lock), "removed" (only in
    the lock) or "scorer" (the battery now compiles under another scorer; `question` is "").
    """

    kind: str
    question: str
    locked: str | None = None
    now: str | None = None
    #: For "changed": the prompt's lines the locked prompt did not have, and how many of its lines
    #: are gone; None when the lock keeps no lines (`lock_lines`).
    added_lines: tuple[str, ...] | None = None
    gone_lines: int | None = None

    def describe(self) -> str:
        """One line a person can act on."""
        if self.kind == "changed":
            return f"{self.question}: prompt drifted (locked {_short(self.locked)}, now {_short(self.now)})"
        if self.kind == "added":
            return f"{self.question}: added since the lock"
        if self.kind == "removed":
            return f"{self.question}: in the lock but no longer in the battery"
        return f"scorer changed: locked {self.locked}, now {self.now}"


def _changed(qid: str, locked: str, now: str, system: str, locked_lines: str | None) -> Drift:
    """The drift of a changed prompt, with its changed lines when the lock keeps lines."""
    if locked_lines is None:
        return Drift(kind="changed", question=qid, locked=locked, now=now)
    added, gone = changed_lines(system, locked_lines)
    return Drift(
        kind="changed", question=qid, locked=locked, now=now, added_lines=tuple(added), gone_lines=gone
    )


def _short(digest: str | None) -> str:
    return (digest or "")[:12]


def lock_path(manifest: str | Path) -> Path:
    """Where the lock of the battery whose manifest (or folder) is `manifest` lives."""
    path = Path(manifest)
    folder = path if path.is_dir() else path.parent
    return folder / LOCK_NAME


def lock_of(compiled: CompiledBattery) -> Lock:
    """The lock that pins `compiled` as it is now."""
    return Lock(
        battery=compiled.name,
        scorer=compiled.scorer,
        questions={qid: q.sha256 for qid, q in compiled.questions.items()},
        lines={qid: line_digests(q.system) for qid, q in compiled.questions.items()},
    )


def lock_text(lock: Lock) -> str:
    """The file text of `lock`: stable JSON, ending with one line break."""
    data = {"lock": LOCK_VERSION, "battery": lock.battery, "scorer": lock.scorer, "questions": lock.questions}
    if lock.lines:
        data["lines"] = lock.lines
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def write_lock(compiled: CompiledBattery, path: str | Path) -> Path:
    """Write the lock of `compiled` to `path` (atomically: a crash leaves the old file or the new).

    The text goes to a new temporary file beside it, created fresh (never a name that already
    exists: a battery from someone else could hold a link by that name pointing anywhere), then
    renamed over `path`, which replaces `path` itself, never what a link there points to.
    """
    path = Path(path)
    with replacing(path) as f:
        f.write(lock_text(lock_of(compiled)).encode("utf-8"))
    return path


def read_lock(path: str | Path) -> Lock:
    """Read a lock file; a missing or unreadable one is a `UsageError` naming the file."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no lock file; write one with `tabench compile BATTERY --lock`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:  # nested too deep too
        raise UsageError(f"{path}: not a tabench lock file ({exc})") from None
    questions = data.get("questions") if isinstance(data, dict) else None
    if (
        not isinstance(questions, dict)
        or data.get("lock") != LOCK_VERSION
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in questions.items())
    ):
        raise UsageError(f"{path}: not a tabench lock file (version {LOCK_VERSION})")
    lines = data.get("lines", {})
    if not isinstance(lines, dict) or not all(isinstance(v, str) for v in lines.values()):
        lines = {}  # a damaged or foreign `lines` only costs the detail of what changed
    return Lock(
        battery=str(data.get("battery", "")),
        scorer=str(data.get("scorer", "")),
        questions=questions,
        lines={str(k): v for k, v in lines.items()},
    )


def check_lock(compiled: CompiledBattery, lock: Lock) -> list[Drift]:
    """Every drift of `compiled` from `lock`: a scorer change, then questions in battery order, then
    the questions only the lock still has, in lock order. Empty when the prompts all match."""
    drifts: list[Drift] = []
    if compiled.scorer != lock.scorer:
        drifts.append(Drift(kind="scorer", question="", locked=lock.scorer, now=compiled.scorer))
    for qid, q in compiled.questions.items():
        locked = lock.questions.get(qid)
        if locked is None:
            drifts.append(Drift(kind="added", question=qid, now=q.sha256))
        elif locked != q.sha256:
            drifts.append(_changed(qid, locked, q.sha256, q.system, lock.lines.get(qid)))
    for qid, locked in lock.questions.items():
        if qid not in compiled.questions:
            drifts.append(Drift(kind="removed", question=qid, locked=locked))
    return drifts

"""The decisions file beside a results file: `RUN.decisions.jsonl`, a person's verdicts on the
`adjudicate` records of `RUN.jsonl`, one `records.Decision` a line, appended to and never rewritten
(the results store's second ledger: docs/architecture.md). How decisions apply to the records is
`review.decisions`'.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

from ..core.errors import StorageError, UsageError
from ..core.jsonl import BadLine, decode_line, numbered_lines
from ..core.records import Decision, decision_decoder, record_encoder
from ..core.safe_open import open_for_append
from .results import repair_tail

#: The suffix that replaces `.jsonl` in a results file's name to name its decisions file.
DECISIONS_SUFFIX = ".decisions.jsonl"


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


def decode_error_col(exc: Exception) -> int:
    """The 1-based column msgspec's `(byte N)` points at, or 1 when it names none."""
    text = str(exc)
    marker = "(byte "
    at = text.rfind(marker)
    if at < 0:
        return 1
    digits = text[at + len(marker) :].split(")", 1)[0]
    return int(digits) + 1 if digits.isdigit() else 1

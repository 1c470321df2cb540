"""The batch ledger: which batches a grading submitted and which requests each holds, beside the
results file (`RESULTS.batches.jsonl` for `RESULTS.jsonl`), append-only JSONL.

    {"type": "submitted", "id": ..., "service": "openai", "endpoint": ..., "model": ..., "round": 1,
     "time": ..., "requests": [[custom_id, system, question, attempt kind], ...]}
    {"type": "ended", "id": ..., "state": "completed", "time": ...}

A batch's line is written and synced the moment the provider has accepted it, before any polling:
a grading killed at any point after that finds it here on `--resume`, waits for it and reads its
results instead of submitting its requests again. (Only a kill in the instant between the
provider's reply and this write can leave a batch unknown here; its answers are then asked again.)
`ended` lines let `tabench batches` tell which batches may still be running. A torn last line is cut
on open (`results.repair_tail`); any other line that is not an entry is skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from ...core.jsonl import BadLine, decode_line, numbered_lines
from ...core.safe_open import open_for_append
from ...store.results import repair_tail


class Submitted(msgspec.Struct, tag="submitted", frozen=True):
    """A batch the provider accepted, and what it holds."""

    id: str
    service: str
    endpoint: str
    model: str
    round: int
    time: str
    requests: list[tuple[str, str, str, str]]


class Ended(msgspec.Struct, tag="ended", frozen=True):
    """A batch seen over, in the provider's word for how it ended."""

    id: str
    state: str
    time: str


Entry = Submitted | Ended
_decoder = msgspec.json.Decoder(Entry)
#: Decodes one ledger line (`outputs.is_ledger_file` recognises a ledger by it).
entry_decoder = _decoder
_encoder = msgspec.json.Encoder()


def ledger_path(results: str | Path) -> Path:
    """The ledger beside `results`: `x.batches.jsonl` for `x.jsonl` (`x.y.batches.jsonl` else)."""
    results = Path(results)
    stem = results.name[: -len(".jsonl")] if results.name.endswith(".jsonl") else results.name
    return results.with_name(f"{stem}.batches.jsonl")


def read_ledger(path: str | Path) -> Iterator[Entry]:
    """The entries of a ledger in file order; none when there is no ledger."""
    if not Path(path).exists():
        return
    with open(path, "rb") as f:
        for _, line in numbered_lines(f):
            try:
                yield decode_line(_decoder, line)
            except BadLine:
                continue


class Ledger:
    """Appends entries to a ledger, each one whole line, synced before `append` returns."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = open_for_append(self.path)
        repair_tail(self.path)

    def append(self, entry: Entry) -> None:
        data = _encoder.encode(entry) + b"\n"
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

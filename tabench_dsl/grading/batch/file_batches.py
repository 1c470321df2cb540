"""Offline batch files (`grade --batch files:DIR`): each round's requests written to a folder in the
OpenAI batch input format, their results read back from the OpenAI batch output format, so any
engine runs them (`vllm run-batch -i ... -o ...`, a Ray Data job, a SLURM array).

    DIR/round-N.requests.jsonl   written by tabench: {custom_id, method: POST, url, body} a line
    DIR/round-N.results.jsonl    written by the engine: {id, custom_id, response: {status_code,
                                 request_id, body}, error} a line, in any order (or a folder of
                                 such files, as Ray Data's `write_json` writes)
    DIR/round-N.cancelled        written by `tabench batches RESULTS --cancel`: stop waiting

It is a batch service like the providers' (`service.BatchService`): the round engine, the ledger,
the cache, the records and the totals are the same. A batch is one requests file, named `round-N`
by the first N whose requests file does not exist yet (a resumed grading never writes over the
files of an earlier run). It has ended once its results file holds a line for each of its requests,
or once it was cancelled (the requests without a line then count as never run, and are asked again
in the next round). A results file being written is read up to its last whole line; a line that
is not an output line stops the grading with its file, line and column. Nothing is sent anywhere:
the judge only names the model and shapes the request bodies, and no key is written to a file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

import msgspec

from ...core.errors import UsageError
from ...core.jsonl import is_json, numbered_lines, strip_bom
from ...core.safe_open import replacing
from ..judges.base import Judge
from .openai_batches import request_line, result_line
from .service import BatchStatus, LineResult, spool


class _Named(msgspec.Struct):
    custom_id: str


_named = msgspec.json.Decoder(_Named)


class FileBatches:
    """Batch files in the folder `folder` (module docstring)."""

    service = "files"
    # One file a round, however large: the engine that reads it has no upload limit to keep.
    max_requests = 1 << 40
    max_bytes = 1 << 60

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._requests: dict[str, frozenset[str]] = {}

    def entry(self, custom_id: str, body: bytes) -> bytes:
        return request_line(custom_id, body)

    def requests_file(self, batch_id: str) -> Path:
        """The requests file of batch `batch_id` (`round-N`)."""
        return self.folder / f"{batch_id}.requests.jsonl"

    def results_file(self, batch_id: str) -> Path:
        """The results file the engine writes for batch `batch_id`."""
        return self.folder / f"{batch_id}.results.jsonl"

    async def submit(self, entries: list[bytes]) -> BatchStatus:
        """Write `entries` as the next round's requests file (whole, then put in place)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        number = 1
        while self.requests_file(f"round-{number}").exists() or self.results_file(f"round-{number}").exists():
            number += 1
        batch_id = f"round-{number}"
        # Whole, then renamed into place: an engine watching the folder never sees half a file, and
        # a link planted under the name is replaced, never written through.
        with spool(entries) as data, replacing(self.requests_file(batch_id)) as out:
            while chunk := data.read(1 << 20):
                out.write(chunk)
        return await self.status(batch_id)

    async def status(self, batch_id: str) -> BatchStatus:
        wanted = self._wanted(batch_id)
        done = len(wanted.intersection(self._answered(batch_id)))
        cancelled = (self.folder / f"{batch_id}.cancelled").exists()
        if done == len(wanted):
            state = "completed"
        elif cancelled:
            state = "cancelled"
        else:
            state = "waiting" if done == 0 else "in_progress"
        return BatchStatus(
            id=batch_id,
            state=state,
            ended=state in ("completed", "cancelled"),
            total=len(wanted),
            done=done,
            problem=f"waiting for {self.results_file(batch_id)}" if state == "waiting" else "",
            sources=(str(self.results_file(batch_id)),),
        )

    async def results(self, status: BatchStatus) -> AsyncIterator[tuple[str, LineResult]]:
        """Every whole line of the results file."""
        path = self.results_file(status.id)
        for file, number, line in self._lines(path):
            try:
                yield result_line(strip_bom(line))
            except (msgspec.DecodeError, RecursionError) as exc:  # nested too deep: bad input too
                raise UsageError(f"{file}:{number}:{_column(exc)}: not a batch output line: {exc}") from None

    async def cancel(self, batch_id: str) -> BatchStatus:
        with replacing(self.folder / f"{batch_id}.cancelled"):
            pass  # an empty marker, put in place like every file tabench writes (never through a link)
        return await self.status(batch_id)

    def _wanted(self, batch_id: str) -> frozenset[str]:
        """The custom_ids of a batch's requests file (read once)."""
        wanted = self._requests.get(batch_id)
        if wanted is None:
            path = self.requests_file(batch_id)
            if not path.is_file():
                raise UsageError(f"{path}: the requests file of batch {batch_id} is gone")
            wanted = frozenset(self._names(path))
            self._requests[batch_id] = wanted
        return wanted

    def _answered(self, batch_id: str) -> set[str]:
        return set(self._names(self.results_file(batch_id)))

    def _names(self, path: Path) -> list[str]:
        names = []
        for file, number, line in self._lines(path):
            try:
                names.append(_named.decode(strip_bom(line)).custom_id)
            except (msgspec.DecodeError, RecursionError) as exc:  # nested too deep: bad input too
                raise UsageError(f"{file}:{number}:{_column(exc)}: not a batch line: {exc}") from None
        return names

    @staticmethod
    def _lines(path: Path) -> list[tuple[Path, int, bytes]]:
        """The whole lines of `path`, or of each file in it when it is a folder (Ray Data's
        `write_json` writes one file per block), with their file and number; none when it does not
        exist. A last line without its line break that is not JSON yet is still being written, and
        is left for the next look."""
        files = (
            sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
            if path.is_dir()
            else [path]
        )
        lines: list[tuple[Path, int, bytes]] = []
        for file in files:
            try:
                with _regular(file) as f:
                    lines.extend(
                        (file, n, line)
                        for n, line in numbered_lines(f)
                        if line.endswith(b"\n") or is_json(line)
                    )
            except FileNotFoundError:
                continue
        return lines


def _regular(file: Path) -> BinaryIO:
    """`file` open for reading; a `UsageError` naming it when it is not a regular file. The folder
    is filled by others: a FIFO there would block the grading forever, a device never end."""
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{file}: not a regular file; a batch results file is one")
    return os.fdopen(fd, "rb")


def _column(exc: Exception) -> int:
    """The column msgspec names in a decode error (`... at byte N`, 0-based), else 1."""
    text = str(exc)
    marker = "at byte "
    if marker in text:
        digits = text.rsplit(marker, 1)[1].split()[0].rstrip(".,")
        if digits.isdigit():
            return int(digits) + 1
    return 1


def file_service(judge: Judge, folder: Path) -> FileBatches:
    """The batch files of `judge`'s requests in `folder`; `UsageError` unless the judge speaks Chat
    Completions (the format of the files), an `openai:` or URL judge."""
    endpoint = judge.batch_endpoint()
    if endpoint is None or not endpoint.chat_completions:
        raise UsageError(
            f"--batch files:DIR writes Chat Completions requests; the {judge.info.describe()} does not "
            "make them (use an openai: or URL judge naming the model the engine serves)"
        )
    return FileBatches(folder)

"""What the parent and a grading worker say to each other, and how it travels.

A frame is a 4-byte little-endian length and a msgpack body (msgspec). The parent sends a
`WorkerConfig` first, then lists of answers; an empty list is the end frame. The worker replies
with `Hello` (its judge), `Records` (finished records, batched per loop turn), `Notice` (a line its
judge said), and `Done` once its cache is committed, or `Failed` for a judge or usage error the
parent raises as its own.

Every worker sends at the pace of one pacer, the parent's (`shared_pacer`): a worker asks for a
send time (`Turn`), the parent grants it (`Permit`, after the end frame too), and the worker says
how the request it sent then ended (`Paced`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Literal

import msgspec

from ...core.compiled import CompiledBattery
from ...core.errors import JudgeError, JudgeUnusable, StorageError, TabenchError, UsageError
from ...core.ratelimit import RateReading
from ...core.records import Answer, Record
from ..session import GradingOptions

#: Seconds a terminated worker gets before it is killed; a worker waits five times that for the
#: parent to read its last frames.
TERMINATE_GRACE = 2.0
#: Bytes of a frame's length prefix.
HEAD = 4
#: Largest line a frame stream buffers (asyncio's `StreamReader` limit); frames are read whole.
STREAM_LIMIT = 1 << 20


class WorkerConfig(msgspec.Struct):
    """What a worker needs to grade: the battery, and the judge, transport and cache options (the
    pool gives each worker its share of the concurrency and rate limits)."""

    battery: CompiledBattery
    options: GradingOptions


class Hello(msgspec.Struct, tag="hello"):
    """The worker's judge is open: its description, for the run's stats."""

    judge: str


class Records(msgspec.Struct, tag="records"):
    """Records the worker finished since its last frame."""

    records: list[Record]


class Failed(msgspec.Struct, tag="failed"):
    """A judge or usage error that stopped the worker, to be raised by the parent."""

    kind: str
    message: str

    @classmethod
    def of(cls, exc: TabenchError) -> Failed:
        return cls(type(exc).__name__, str(exc))

    def error(self) -> TabenchError:
        """The error as the parent raises it: of the worker's kind where the CLI tells them apart
        (a usage error exits 2), a plain `TabenchError` otherwise."""
        kinds: dict[str, type[TabenchError]] = {
            "UsageError": UsageError,
            "JudgeError": JudgeError,
            "JudgeUnusable": JudgeUnusable,
            "StorageError": StorageError,
        }
        return kinds.get(self.kind, TabenchError)(self.message)


class Notice(msgspec.Struct, tag="notice"):
    """A line the worker's judge said during the run (a refused temperature dropped: `Judge.notice`),
    for the parent to show once however many workers say it."""

    text: str


class Done(msgspec.Struct, tag="done"):
    """The worker graded all it was given and committed its cache; it exits next."""


class Turn(msgspec.Struct, tag="turn"):
    """A worker asks the shared pacer for a send time; `ask` names the request in the `Permit`."""

    ask: int


class Permit(msgspec.Struct, tag="permit"):
    """The shared pacer's send time for the worker's `Turn` named `ask`: the request's ticket."""

    ask: int
    ticket: float


class Paced(msgspec.Struct, tag="paced"):
    """How the request sent on `ticket` ended, for the shared pacer: a reply (with its rate-limit
    reading and the tokens it was paced for), a push-back (and the pause it asked for), or a fault."""

    ticket: float
    outcome: Literal["success", "push_back", "fault"]
    pause: float = 0.0
    reading: RateReading | None = None
    tokens: int = 0
    #: When the worker sent it (the system's monotonic clock; 0.0: not sent, or not known).
    sent: float = 0.0


def _plain(value: object) -> object:
    """What a frame holds of a value msgspec does not encode itself: a battery's questions read
    from the compile cache (`kept_questions.KeptQuestions`) go to a worker whole, as a dict."""
    if isinstance(value, Mapping):
        return dict(value)
    raise NotImplementedError(f"a frame cannot hold {type(value).__name__}")


_encoder = msgspec.msgpack.Encoder(enc_hook=_plain)
#: Decodes what a worker sends (the parent's side).
reply_decoder = msgspec.msgpack.Decoder(Hello | Records | Notice | Failed | Done | Turn | Paced)
#: Decodes the parent's first frame (the worker's side).
config_decoder = msgspec.msgpack.Decoder(WorkerConfig)
#: Decodes what the parent hands a worker after its configuration: answer batches (an empty batch
#: is the end frame) and permits to send (the worker's side).
work_decoder = msgspec.msgpack.Decoder(list[Answer] | Permit)


def frame(message: object) -> bytes:
    """One frame: length and msgpack body."""
    body = _encoder.encode(message)
    return len(body).to_bytes(HEAD, "little") + body


async def read_frame(stream: asyncio.StreamReader) -> bytes | None:
    """The next frame's body, or None when the stream ended first (the other side is gone)."""
    try:
        head = await stream.readexactly(HEAD)
        return await stream.readexactly(int.from_bytes(head, "little"))
    except asyncio.IncompleteReadError:
        return None

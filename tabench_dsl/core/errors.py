"""Every error tabench raises, under one root.

    TabenchError
     +-- SpecError          a problem in a battery's files, at a path, line and column
     +-- SpecErrors         several SpecErrors found in one pass (lint reports them all)
     +-- UsageError         a bad command line or a bad argument value
     +-- StorageError       the results file, the reply cache or a decisions file could not be written
     +-- JudgeError         a judge could not be reached or configured
          +-- JudgeUnusable   no answer can be graded with this judge (unreachable, key refused): exit 2
          +-- TransportError  one attempt failed in transport (HTTP 429/5xx, timeout, reset, bad body)

The CLI turns each into a message, never a traceback: a SpecError renders as
`path:line:col: message`, the source line, a caret under the column and an optional hint.
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .ratelimit import RateReading


class TabenchError(Exception):
    """The root of every error tabench raises on purpose."""


class SpecError(TabenchError):
    """A problem in a spec file, located at `path:line:col` (both 1-based).

    `severity` is "error" or "warning": lint collects warnings in the same shape.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path,
        line: int,
        col: int,
        hint: str | None = None,
        source_line: str | None = None,
        severity: str = "error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = str(path)
        self.line = line
        self.col = col
        self.hint = hint
        self.severity = severity
        self.source_line = source_line if source_line is not None else _read_line(self.path, line)

    def render(self) -> str:
        """The full report: location and message, the source line, a caret, the hint.

        The source line and whatever the message quotes come from a battery someone else may have
        written: each is shown as text (`display.shown`), and the caret is placed under the column
        as the line is shown, escapes and all.
        """
        from .display import shown

        label = "" if self.severity == "error" else f"{self.severity}: "
        out = [shown(f"{self.path}:{self.line}:{self.col}: {label}{self.message}", lines=True)]
        if self.source_line is not None:
            before = shown(self.source_line[: max(self.col - 1, 0)], lines=True)
            out.append(f"    {shown(self.source_line, lines=True)}")
            out.append("    " + _caret_pad(before, len(before) + 1) + "^")
        if self.hint:
            out.append(f"hint: {shown(self.hint, lines=True)}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


class SpecErrors(TabenchError):
    """Several spec problems found in one pass, in file and line order."""

    def __init__(self, errors: list[SpecError]) -> None:
        super().__init__(f"{len(errors)} problem(s)")
        self.errors = errors

    def render(self) -> str:
        return "\n".join(e.render() for e in self.errors)

    def __str__(self) -> str:
        return self.render()


class UsageError(TabenchError):
    """A bad command line: a missing file, a bad flag value, an unknown question id."""


class StorageError(TabenchError):
    """A file tabench writes could not take more (disk full, file size limit, I/O error).

    The message names the file and says what was kept: what was written before the failure stays
    whole, and a half-written line is taken back, so the run can be continued later.
    """


class JudgeError(TabenchError):
    """A judge could not be configured or reached. Messages never carry a key."""


class JudgeUnusable(JudgeError):
    """No answer can be graded with this judge as configured: every one of its first calls failed
    to connect, or it refused a request with HTTP 401, 403 or 404. The run stops (exit 2, like a bad
    argument: nothing more can be done until the user acts); the records written stay. The message
    names the judge's URL without credentials, query or fragment, never a key."""


class TransportError(JudgeError):
    """One judge attempt failed in transport; the runner may retry it.

    `retry_after` is the server's `Retry-After` in seconds when it gave one; `status` the HTTP status
    (None for timeouts, resets and bodies that are not a completion); `rate` what the server's
    rate-limit headers said (`ratelimit.RateReading`), when it sent any.

    `rate_limited` is true for a 429, and for a 503 or 529 that names a Retry-After: a server
    saying "not now, come back then" is pacing us, not failing, and such a reply is waited out
    rather than counted against the retries.

    `stops_run` is true for a refusal no later call can get past whatever the answer (no credit or
    quota left): the grading stops at once, keeping what it wrote, for `--resume` to continue.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        retryable: bool = True,
        rate: RateReading | None = None,
        stops_run: bool = False,
        unreachable: bool = False,
    ) -> None:
        super().__init__(message)
        #: True when no connection to the judge could be made (refused, no such host).
        self.unreachable = unreachable
        self.status = status
        self.retry_after = retry_after
        self.retryable = retryable
        self.rate = rate
        self.stops_run = stops_run

    @property
    def rate_limited(self) -> bool:
        if self.stops_run:
            return False
        return self.status == 429 or (self.status in (503, 529) and self.retry_after is not None)


def _read_line(path: str, line: int) -> str | None:
    # Only a regular file is opened (a FIFO would block); a byte order mark is not part of line 1.
    # The lines are read once per version of the file (`_file_lines`): a lint of a large file with
    # many problems reads it once, not once per problem.
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    lines = _file_lines(path, info.st_mtime_ns, info.st_size)
    return lines[line - 1] if lines is not None and 0 < line <= len(lines) else None


@functools.lru_cache(maxsize=8)
def _file_lines(path: str, mtime_ns: int, size: int) -> tuple[str, ...] | None:
    try:
        with open(path, encoding="utf-8-sig") as f:
            return tuple(text.rstrip("\r\n") for text in f)
    except (OSError, UnicodeDecodeError):
        return None


def _caret_pad(source_line: str, col: int) -> str:
    # Keep tabs as tabs so the caret lines up under the column whatever the tab width.
    prefix = source_line[: max(col - 1, 0)]
    return "".join("\t" if ch == "\t" else " " for ch in prefix)

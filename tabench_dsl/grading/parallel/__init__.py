"""`tabench grade --workers N`: grading spread over N worker processes, one results writer.

Its modules and how they fit: docs/architecture.md.
"""

from __future__ import annotations

from .frames import WorkerConfig
from .pool import WORKER_COMMAND, WorkerPool, parse_workers

__all__ = ["WORKER_COMMAND", "WorkerConfig", "WorkerPool", "parse_workers"]

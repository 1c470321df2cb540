"""Batch grading (`grade --batch`): the judge calls sent to a provider's batch service, in rounds.

Its modules and how they fit: docs/architecture.md.
"""

from __future__ import annotations

from .grader import BatchGrader, batch_service
from .ledger import Ended, Ledger, Submitted, ledger_path, read_ledger
from .polling import PollPlan
from .service import BatchStatus

__all__ = [
    "BatchGrader",
    "BatchStatus",
    "Ended",
    "Ledger",
    "PollPlan",
    "Submitted",
    "batch_service",
    "ledger_path",
    "read_ledger",
]

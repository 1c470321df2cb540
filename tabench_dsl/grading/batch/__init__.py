"""Batch grading (`tabench grade --batch`): the judge calls of a grading sent to the provider's batch
service (OpenAI's Batch API, Anthropic's Message Batches) at half the price, in rounds.

    grader.py             BatchGrader: the live Grader, its judge call replaced by a batch request
    rounds.py             the round engine: gather requests, submit, poll, hand out result lines
    ledger.py             RESULTS.batches.jsonl: the batches submitted, written before polling
    polling.py            how often to poll (backing off, TABENCH_BATCH_POLL)
    service.py            what both services share: BatchStatus, LineResult, the HTTP wire
    openai_batches.py     POST /files + /batches, GET /batches/{id}, /files/{id}/content
    anthropic_batches.py  POST /v1/messages/batches, GET .../{id}, its results_url
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

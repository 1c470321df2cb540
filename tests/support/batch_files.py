"""An offline batch engine for tests of `grade --batch files:DIR`: it answers each
`round-N.requests.jsonl` by sending every request body to a judge server (support/judge_server.py)
and writes `round-N.results.jsonl`, as `vllm run-batch -i ... -o ...` does.

The line formats are checked against the `openai` SDK's own types: each input line is
`{custom_id, method, url, body}` with `body` a Chat Completions request
(`openai.types.chat.completion_create_params.CompletionCreateParamsNonStreaming`), and each
output line is what
`BatchRequestOutput` in vLLM's `vllm/entrypoints/openai/run_batch.py` and OpenAI's batch output file
hold: `{id, custom_id, response: {status_code, request_id, body: ChatCompletion}, error}`, with
`error` an `openai.types.BatchError` when there is one.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Literal

import aiohttp
from openai.types import BatchError
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import BaseModel, TypeAdapter

_body = TypeAdapter(CompletionCreateParamsNonStreaming)


class BatchRequestInput(BaseModel, extra="forbid"):
    """One line of a batch input file (OpenAI's batch guide; vLLM's `BatchRequestInput`)."""

    custom_id: str
    method: Literal["POST"]
    url: Literal["/v1/chat/completions"]
    body: dict[str, Any]


class BatchResponse(BaseModel):
    status_code: int
    request_id: str
    body: ChatCompletion | None = None


class BatchRequestOutput(BaseModel):
    """One line of a batch output file."""

    id: str
    custom_id: str
    response: BatchResponse | None
    error: BatchError | None


def check_request_line(line: str) -> BatchRequestInput:
    """One input line, validated: the line's shape and its body as a Chat Completions request."""
    request = BatchRequestInput.model_validate_json(line)
    checked = _body.validate_python(request.body)
    list(checked["messages"])  # an iterable field is checked as it is read
    assert "stream" not in request.body or request.body["stream"] is False
    return request


def output_line(custom_id: str, status: int, body: dict[str, Any]) -> str:
    """One output line for a reply the server gave, checked against the SDK's types."""
    ok = 200 <= status < 300
    line = BatchRequestOutput(
        id=f"batch_req_{uuid.uuid4().hex}",
        custom_id=custom_id,
        response=BatchResponse(
            status_code=status,
            request_id=f"req_{uuid.uuid4().hex}",
            body=ChatCompletion(**body) if ok else None,
        ),
        error=None if ok else BatchError(code=str(status), message=json.dumps(body)),
    )
    return line.model_dump_json()


def pending_rounds(folder: Path) -> list[str]:
    """The batches (`round-N`) whose requests file has no results yet, in round order."""
    names = []
    for path in folder.glob("round-*.requests.jsonl"):
        batch = path.name.removesuffix(".requests.jsonl")
        if not (folder / f"{batch}.results.jsonl").exists():
            names.append(batch)
    return sorted(names, key=lambda name: int(name.split("-")[1]))


async def answer_round(folder: Path, batch: str, judge_url: str) -> int:
    """Answer every request of `batch` through the judge server; the requests answered."""
    requests = [
        check_request_line(line)
        for line in (folder / f"{batch}.requests.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    lines = []
    async with aiohttp.ClientSession() as session:
        for request in requests:
            async with session.post(f"{judge_url}/chat/completions", json=request.body) as response:
                lines.append(output_line(request.custom_id, response.status, await response.json()))
    partial = folder / f".{batch}.results.partial"
    partial.write_text("".join(line + "\n" for line in reversed(lines)), encoding="utf-8")  # any order
    partial.rename(folder / f"{batch}.results.jsonl")
    return len(requests)

"""The batch service a ledger entry names, opened again without a grading (`tabench batches`): the
service and API base the entry recorded, the key from the environment under live grading's rules.

OPENAI_API_KEY goes to an OpenAI-wire service only where a judge would send it: OpenAI's own API, the
server OPENAI_BASE_URL names, or a URL judge's server over https or on this machine
(`urls.url_gets_key`). ANTHROPIC_API_KEY goes to an Anthropic-wire service.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

import aiohttp

from ...core.errors import UsageError
from ..judges.anthropic import ANTHROPIC_KEY_ENV, AnthropicJudge
from ..judges.base import JudgeParams
from ..judges.openai import OPENAI_BASE_URL, OPENAI_KEY_ENV, OpenAIJudge, normalize_base_url
from ..judges.urls import url_gets_key
from .file_batches import FileBatches
from .grader import batch_service
from .ledger import Submitted
from .service import BatchService


def _openai_key(endpoint: str, env: Mapping[str, str]) -> str | None:
    key = env.get(OPENAI_KEY_ENV)
    if not key:
        return None
    own = {normalize_base_url(OPENAI_BASE_URL)}
    if env.get("OPENAI_BASE_URL"):
        with contextlib.suppress(ValueError):  # a bad OPENAI_BASE_URL names no server
            own.add(normalize_base_url(env["OPENAI_BASE_URL"]))
    return key if endpoint in own or url_gets_key(endpoint) else None


def reopen_service(entry: Submitted, session: aiohttp.ClientSession, env: Mapping[str, str]) -> BatchService:
    """The service that holds the batch of `entry`, with the headers its judge would send (batch
    files: the folder the entry names, no key)."""
    if entry.service == FileBatches.service:
        return FileBatches(entry.endpoint)
    params = JudgeParams(model=entry.model)
    try:
        if entry.service == "anthropic":
            judge: OpenAIJudge | AnthropicJudge = AnthropicJudge(
                params, session=session, api_key=env.get(ANTHROPIC_KEY_ENV), base_url=entry.endpoint
            )
        elif entry.service == "openai":
            judge = OpenAIJudge(
                params, session=session, base_url=entry.endpoint, api_key=_openai_key(entry.endpoint, env)
            )
        else:
            raise UsageError(f"batch {entry.id}: unknown batch service {entry.service!r}")
    except ValueError as exc:
        raise UsageError(f"batch {entry.id}: {exc}") from None
    secrets = tuple(v for v in (env.get(OPENAI_KEY_ENV), env.get(ANTHROPIC_KEY_ENV)) if v)
    return batch_service(judge, secrets)

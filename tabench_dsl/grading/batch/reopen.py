"""The batch service a ledger entry names, opened again without a grading (`tabench batches`).

The ledger is a data file: it travels beside a results file and anyone may have edited it, so it
never chooses where a key goes. The endpoint is the one the user names now, by the rule grading
follows (`endpoint_named_now`): for an OpenAI-wire batch a `--judge` URL, else OPENAI_BASE_URL, else
OpenAI's own API; for an Anthropic batch ANTHROPIC_BASE_URL, else Anthropic's own API. An entry
whose recorded endpoint differs is refused (`check_endpoint`), naming both, before anything is sent.

OPENAI_API_KEY goes where a judge would send it: OpenAI's own API or the server OPENAI_BASE_URL names,
and a `--judge` URL only over https or on this machine (`urls.url_gets_key`). ANTHROPIC_API_KEY goes
to the Anthropic API root the environment names. An Azure batch is checked against the resource
AZURE_OPENAI_ENDPOINT names, and AZURE_OPENAI_API_KEY goes only below it (`azure.reopen_target`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import aiohttp
import msgspec

from ...core.display import shown
from ...core.errors import UsageError
from ..judges.anthropic import ANTHROPIC_BASE_URL, ANTHROPIC_KEY_ENV, AnthropicJudge, normalize_anthropic_base
from ..judges.azure import AZURE_ENDPOINT_ENV, AZURE_KEY_ENV, AzureJudge, reopen_target
from ..judges.base import JudgeParams
from ..judges.openai import OPENAI_BASE_URL, OPENAI_KEY_ENV, OpenAIJudge, normalize_base_url
from ..judges.urls import safe_url, url_gets_key
from .file_batches import FileBatches
from .grader import batch_service
from .ledger import Submitted
from .service import BatchService

#: The batch services a ledger may name.
SERVICES = ("openai", "anthropic", "azure", FileBatches.service)


class Endpoint(msgspec.Struct, frozen=True):
    """Where the user's command line and environment send one service's batch calls now."""

    url: str
    #: What named it, for messages: `--judge`, `OPENAI_BASE_URL`, or the provider's own API.
    source: str
    gets_key: bool


def endpoint_named_now(service: str, judge_url: str | None, env: Mapping[str, str]) -> Endpoint:
    """The endpoint of `service` the user names now (`judge_url` is a `--judge` URL, or None).
    `UsageError` for a base URL that cannot be used."""
    if service == FileBatches.service:
        # A folder the ledger names is not where tabench reads or writes (`--cancel` writes a
        # marker there): the user names the folder now, as `--judge files:DIR`.
        named = judge_url.removeprefix("files:") if judge_url and judge_url.startswith("files:") else ""
        return Endpoint(str(Path(named).resolve()) if named else "", "--judge files:DIR", False)
    try:
        if service == "azure":  # the resource AZURE_OPENAI_ENDPOINT names (`azure.reopen_target`)
            named = (env.get(AZURE_ENDPOINT_ENV) or "").strip().rstrip("/")
            return Endpoint(named, AZURE_ENDPOINT_ENV, bool(named))
        if service == "anthropic":
            if env.get("ANTHROPIC_BASE_URL"):
                url = normalize_anthropic_base(env["ANTHROPIC_BASE_URL"])
                return Endpoint(url, "ANTHROPIC_BASE_URL", True)
            return Endpoint(normalize_anthropic_base(ANTHROPIC_BASE_URL), "Anthropic's API", True)
        if judge_url:
            return Endpoint(normalize_base_url(judge_url), "--judge", url_gets_key(judge_url))
        if env.get("OPENAI_BASE_URL"):
            return Endpoint(normalize_base_url(env["OPENAI_BASE_URL"]), "OPENAI_BASE_URL", True)
        return Endpoint(normalize_base_url(OPENAI_BASE_URL), "OpenAI's API", True)
    except ValueError as exc:
        raise UsageError(f"batch endpoint: {exc}") from None


def check_endpoint(entry: Submitted, now: Endpoint) -> None:
    """`UsageError` unless the ledger's endpoint for `entry` is the one the user names now."""
    if entry.service not in SERVICES:
        raise UsageError(f"batch {shown(entry.id)}: unknown batch service '{shown(entry.service)}'")
    if _same(entry.endpoint, entry.service) != now.url:
        raise UsageError(
            f"batch {shown(entry.id)}: the ledger names the endpoint '{shown(safe_url(entry.endpoint))}', "
            f"but {now.source} names '{shown(now.url)}'; nothing was sent. Name the ledger's endpoint "
            "yourself (--judge URL, OPENAI_BASE_URL, ANTHROPIC_BASE_URL or AZURE_OPENAI_ENDPOINT) if you "
            "trust it"
        )


def _same(url: str, service: str) -> str:
    """`url` normalised as its service's judge would; "" when it is no usable base URL."""
    if service == FileBatches.service:
        return str(Path(url).resolve()) if url else ""
    if service == "azure":  # a batch's Azure base is a chat base below its resource's /openai/
        root, marker, _ = url.partition("/openai/")
        return root.rstrip("/") if marker else ""
    try:
        return normalize_anthropic_base(url) if service == "anthropic" else normalize_base_url(url)
    except ValueError:
        return ""


def reopen_service(
    entry: Submitted, session: aiohttp.ClientSession, env: Mapping[str, str], now: Endpoint
) -> BatchService:
    """The service at `now` (checked against `entry` by `check_endpoint`), with the headers its judge
    would send there."""
    if entry.service == FileBatches.service:
        return FileBatches(now.url)
    params = JudgeParams(model=entry.model)
    try:
        if entry.service == "anthropic":
            judge: OpenAIJudge | AnthropicJudge = AnthropicJudge(
                params, session=session, api_key=env.get(ANTHROPIC_KEY_ENV), base_url=now.url
            )
        elif entry.service == "azure":
            target, key = reopen_target(entry.endpoint, entry.model, env)
            judge = AzureJudge(params, target, session=session, api_key=key)
        else:
            key = env.get(OPENAI_KEY_ENV) if now.gets_key else None
            judge = OpenAIJudge(params, session=session, base_url=now.url, api_key=key)
    except ValueError as exc:
        raise UsageError(f"batch {shown(entry.id)}: {exc}") from None
    secrets = tuple(
        v for v in (env.get(OPENAI_KEY_ENV), env.get(ANTHROPIC_KEY_ENV), env.get(AZURE_KEY_ENV)) if v
    )
    return batch_service(judge, secrets)

"""The Azure OpenAI judge: Chat Completions at an Azure OpenAI resource, in either of its URL forms.

    azure:DEPLOYMENT     POST {AZURE_OPENAI_ENDPOINT}/openai/deployments/DEPLOYMENT/chat/completions
                              ?api-version={OPENAI_API_VERSION, default DEFAULT_API_VERSION}
    azure:v1:MODEL       POST {AZURE_OPENAI_ENDPOINT}/openai/v1/chat/completions (no api-version)

Both send the key of AZURE_OPENAI_API_KEY as the `api-key` header, and `model` in the body (the
deployment name; the classic path names it in the URL too, as Azure's own clients do). The body,
the reply and the errors are Chat Completions' (`openai.OpenAIJudge`), rate-limit headers included.
`azure` alone takes the deployment from `--model` or the manifest.

The key goes only to the endpoint the user named in AZURE_OPENAI_ENDPOINT, and only over https or
to a loopback host (a stand-in for tests), the rule every other key follows (`urls.url_gets_key`):
a plain-http endpoint elsewhere is a usage error, not a grading without a key. A missing endpoint,
or a missing key for a non-loopback endpoint, is a usage error naming the variable.

Batches go to Azure's Batch API, which is OpenAI's below `{endpoint}/openai` (with `api-version`) or
`{endpoint}/openai/v1`, its request lines addressed to `/chat/completions`
(`batch.azure_batches`); the deployment must be a Global Batch (or Data Zone Batch) deployment.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlunsplit

from ...core.errors import UsageError
from ._http import http_identity
from .base import BatchEndpoint, JudgeIdentity, JudgeParams
from .openai import OpenAIJudge
from .registry import JudgeSetup, register_identity, register_judge
from .urls import host_of, split_http_url, url_gets_key

#: The variables an Azure judge reads (the names Azure's own clients read).
AZURE_ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
AZURE_KEY_ENV = "AZURE_OPENAI_API_KEY"
API_VERSION_ENV = "OPENAI_API_VERSION"
#: The api-version of the classic deployment path when OPENAI_API_VERSION is unset: the latest
#: generally available data-plane version (the v1 path needs none).
DEFAULT_API_VERSION = "2024-10-21"
#: An Azure deployment name: letters, digits, `_`, `-` and `.`, as the portal allows.
DEPLOYMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}\Z")
#: An api-version: a date, maybe with `-preview`, or `preview`/`latest`.
API_VERSION = re.compile(r"(?:\d{4}-\d{2}-\d{2}(?:-preview)?|preview|latest)\Z")


@dataclass(frozen=True)
class AzureTarget:
    """Where an Azure judge sends: the chat `base` (deployment or v1 path), the `batch_base` its
    Batch API lives below, the `api_version` the classic path adds (None on v1) and the `model` the
    body names."""

    base: str
    batch_base: str
    api_version: str | None
    model: str


def azure_target(argument: str, model: str | None, env: Mapping[str, str]) -> AzureTarget:
    """The target of `azure:ARGUMENT` (`DEPLOYMENT` or `v1:MODEL`; empty: `model`); `UsageError` for a
    missing or bad endpoint, deployment or api-version. Never reads the key (the dry run calls it)."""
    v1 = argument == "v1" or argument.startswith("v1:")
    name = (argument[3:] if v1 else argument) or model or ""
    form = "azure:v1:MODEL" if v1 else "azure:DEPLOYMENT"
    if not name:
        raise UsageError(f"--judge {form} needs a deployment name: {form}, or --model M")
    if not DEPLOYMENT_NAME.match(name):
        raise UsageError(f"--judge {form}: {name!r} is not a deployment name (letters, digits, _ - .)")
    endpoint = (env.get(AZURE_ENDPOINT_ENV) or "").strip()
    if not endpoint:
        raise UsageError(f"--judge {form} needs {AZURE_ENDPOINT_ENV} (https://RESOURCE.openai.azure.com)")
    try:
        parts = split_http_url(endpoint, AZURE_KEY_ENV)
    except ValueError as exc:
        raise UsageError(f"{AZURE_ENDPOINT_ENV}: {exc}") from None
    if not url_gets_key(endpoint):
        raise UsageError(f"{AZURE_ENDPOINT_ENV} must be an https URL (the key would travel in clear)")
    root = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", "")) + "/openai"
    if v1:
        return AzureTarget(root + "/v1", root + "/v1", None, name)
    version = (env.get(API_VERSION_ENV) or DEFAULT_API_VERSION).strip()
    if not API_VERSION.match(version):
        raise UsageError(f"{API_VERSION_ENV}: {version!r} is not an api-version (2024-10-21)")
    return AzureTarget(f"{root}/deployments/{name}", root, version, name)


def reopen_target(base: str, model: str, env: Mapping[str, str]) -> tuple[AzureTarget, str | None]:
    """The target a batch ledger's Azure `base` (a judge's chat base) stands for, and the key it may be
    sent: AZURE_OPENAI_API_KEY only when `base` lies below the resource AZURE_OPENAI_ENDPOINT names
    (https or loopback); the classic path's api-version from OPENAI_API_VERSION, else the default."""
    root, marker, _ = base.partition("/openai/")
    v1 = base.endswith("/openai/v1")
    version = None if v1 else (env.get(API_VERSION_ENV) or DEFAULT_API_VERSION).strip()
    target = AzureTarget(base, root + "/openai" + ("/v1" if v1 else ""), version, model)
    named = (env.get(AZURE_ENDPOINT_ENV) or "").strip().rstrip("/")
    key = env.get(AZURE_KEY_ENV) or None
    trusted = bool(marker) and bool(named) and root == named and url_gets_key(base)
    return target, key if trusted else None


def _loopback(url: str) -> bool:
    host = host_of(url).rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _keep_path(url: str) -> str:
    """The base as given (an Azure path is never shortened or given `/v1`)."""
    parts = split_http_url(url, AZURE_KEY_ENV)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


class AzureJudge(OpenAIJudge):
    """Chat Completions at an Azure OpenAI resource; the key goes as `api-key`."""

    normalize_base = staticmethod(_keep_path)

    def __init__(
        self, params: JudgeParams, target: AzureTarget, *, api_key: str | None, **options: Any
    ) -> None:
        super().__init__(
            params, base_url=target.base, api_key=api_key, backend="azure", key_env=AZURE_KEY_ENV, **options
        )
        self.target = target
        if target.api_version is not None:
            self.endpoint += "?api-version=" + quote(target.api_version, safe="")

    def batch_endpoint(self) -> BatchEndpoint | None:
        """Azure's Batch API below the resource's `/openai` (`batch.azure_batches`)."""
        return BatchEndpoint("azure", self.target.batch_base, self.target.api_version)

    def wire_headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"accept": "application/json"}
        if api_key:
            headers["api-key"] = api_key
        return headers


@register_judge("azure")
def azure_judge(setup: JudgeSetup) -> AzureJudge:
    """`azure:DEPLOYMENT` or `azure:v1:MODEL` at AZURE_OPENAI_ENDPOINT with AZURE_OPENAI_API_KEY."""
    target = azure_target(setup.argument, setup.model, setup.env)
    key = setup.env.get(AZURE_KEY_ENV) or None
    if not key and not _loopback(target.base):  # a stand-in on this machine may need none
        raise UsageError(f"--judge azure: needs {AZURE_KEY_ENV} in the environment")
    return AzureJudge(
        setup.params("azure:DEPLOYMENT", model=target.model),
        target,
        session=setup.http_session(),
        api_key=key,
        timeout=setup.timeout,
        prompt_cache=setup.prompt_cache,
    )


@register_identity("azure")
def azure_identity(setup: JudgeSetup) -> JudgeIdentity:
    """The identity `azure_judge` gives its judge, for the dry run."""
    target = azure_target(setup.argument, setup.model, setup.env)
    return http_identity("azure", target.base, setup.params("azure:DEPLOYMENT", model=target.model))

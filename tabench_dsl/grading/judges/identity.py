"""Which judge a grading would ask, worked out without building it: `judge_identity`.

`grade --dry-run` looks the first asks up in the reply cache, whose key names the judge's backend,
endpoint and decoding parameters (`cache.cache_key`). It must do so without a key in the
environment, without an HTTP session and without reaching anything, so it cannot build the judge
(`factory.make_judge` refuses a real API host without its key). This module names the judge the
same way the backends do, from the same parts: the choice (`factory.choose_judge`), the backend a
judge names (`registry.find_backend`), each backend's own base URL rules (`normalize_base_url`,
`normalize_anthropic_base`, `urls.safe_url`) and the parameters' order of precedence
(`decoding.decoding_params`, which the factory calls too).
`tests/grading/test_dry_run.py` checks that it agrees with the judge `make_judge` builds, backend by backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

import msgspec

from ...core.errors import UsageError
from ...core.nodes import JudgeDefaults
from ...core.records import JudgeInfo
from ...core.scorer import ScorerSettings
from .base import JudgeParams
from .decoding import DecodingFlags, decoding_params
from .factory import request_shape, resolve_backend
from .request_shape import RequestOptions
from .urls import safe_url


class JudgeIdentity(msgspec.Struct, frozen=True):
    """A judge as its records and cache entries name it: `info` (backend, model, endpoint) and the
    decoding `params` its calls carry, and the digest of what the user adds to them
    (`Judge.request_shape`)."""

    info: JudgeInfo
    params: JudgeParams
    request_shape: str = ""


def judge_identity(
    name: str | None,
    *,
    model: str | None = None,
    manifest_judge: JudgeDefaults | None = None,
    settings: ScorerSettings | None = None,
    env: Mapping[str, str],
    request: RequestOptions | None = None,
    decoding: DecodingFlags | None = None,
) -> JudgeIdentity:
    """The identity of the judge `make_judge` would build from the same arguments; raises the same
    `UsageError`s it raises for the choice (a model nothing reaches, a URL only the manifest names,
    an unknown judge name, a missing model), never one for a missing API key."""
    manifest = manifest_judge or JudgeDefaults()
    _, backend, argument = resolve_backend(name, model=model, manifest_judge=manifest, env=env)
    shape = request_shape(request, manifest, settings).digest
    decided = decoding_params(decoding, manifest, (settings or ScorerSettings()).judge)

    def params(needed_by: str, chosen: str | None) -> JudgeParams:
        chosen = chosen or model or manifest.model
        if not chosen:
            raise UsageError(f"--judge {needed_by} needs a model: --model M, or judge.model in battery.yaml")
        return JudgeParams(
            model=chosen,
            temperature=decided.temperature,
            max_tokens=decided.max_tokens,
            reasoning_effort=decided.reasoning_effort,
            thinking_budget=decided.thinking_budget,
        )

    if backend.kind == "builtin":
        from .builtin import INFO

        return JudgeIdentity(INFO, JudgeParams(model=INFO.model))
    if backend.kind == "replay":
        if not argument:
            raise UsageError("--judge replay:FILE needs the results file to replay")
        info = JudgeInfo(backend="replay", model="recorded", label=argument)
        return JudgeIdentity(info, JudgeParams(model="recorded"))
    try:
        if backend.kind == "anthropic":
            from .anthropic import ANTHROPIC_BASE_URL, normalize_anthropic_base

            base = normalize_anthropic_base(env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL)
            return _http("anthropic", base, params("anthropic:MODEL", argument or None), shape)
        if backend.kind == "azure":
            from .azure import azure_target

            target = azure_target(argument, model or manifest.model, env)
            return _http("azure", target.base, params("azure:DEPLOYMENT", target.model), shape)
        from .openai import OPENAI_BASE_URL, normalize_base_url

        if backend.kind == "openai":
            base = normalize_base_url(env.get("OPENAI_BASE_URL") or OPENAI_BASE_URL)
            return _http("openai", base, params("openai:MODEL", argument or None), shape)
        if backend.kind == "url":
            name = urlsplit(argument).netloc.rpartition("@")[2] or "url"
            judge_params = params(safe_url(argument), None)
            return _http(name, normalize_base_url(argument), judge_params, shape)
    except ValueError as exc:
        raise UsageError(f"--judge: {exc}") from None
    raise UsageError(f"the {backend.kind} judge cannot be named without building it")


def _http(backend: str, base: str, params: JudgeParams, shape: str) -> JudgeIdentity:
    shown = safe_url(base)
    info = JudgeInfo(backend=backend, model=params.model, label=shown, endpoint=shown)
    return JudgeIdentity(info, params, shape)

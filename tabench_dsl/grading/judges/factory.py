"""Choosing and configuring the judge (docs/grading.md, "Judges"): `make_judge`.

Which judge, first rule that applies (`choose_judge`, which also says where the choice came from):

1. `--judge JUDGE`;
2. the manifest's `judge.backend` (`builtin`, `openai[:MODEL]` or `anthropic[:MODEL]` only, see below);
3. when a model is named (`--model`, or the manifest's `judge.model`): `openai` if OPENAI_BASE_URL
   or OPENAI_API_KEY is set, else `anthropic` if ANTHROPIC_API_KEY is set, else a `UsageError`
   (exit 2) saying what to set: a forgotten `export` must not turn a model's grades into lexical ones;
4. `builtin`, only when no model is named at all.

An empty variable counts as unset. A judge name is

    builtin               the deterministic lexical judge in this process (no server, no key)
    openai:MODEL          Chat Completions at OPENAI_BASE_URL, else https://api.openai.com/v1
    anthropic:MODEL       the Messages API at ANTHROPIC_BASE_URL, else https://api.anthropic.com
    http(s)://HOST[/v1]   any Chat Completions server; the model from --model or judge.model
    azure:DEPLOYMENT      Azure OpenAI's deployment path at AZURE_OPENAI_ENDPOINT (api-version from
                          OPENAI_API_VERSION); azure:v1:MODEL its v1 path (`azure`)
    replay:RESULTS.jsonl  the replies recorded in an earlier results file

`openai` and `anthropic` without `:MODEL` take the model from `--model` or the manifest.
Parameters, first found wins: the flags (`model`; `temperature`, `max_tokens` and the reasoning
controls as `decoding.DecodingFlags`), the manifest's `judge:`, the scorer's `judge:` settings, then
temperature 0 and 300 tokens (`decoding.decoding_params`, the one place this is decided). The
price (`judge_price`: `--price`, else the manifest's `judge.price` for the judge the manifest chose
only) goes into the judge's `info`, so every record says what it cost.
The provider's prompt-cache hint is sent unless the manifest says `judge: {prompt_cache: false}`.
What the user adds to every request (`request_shape`: `--structured` over the manifest's
`judge.structured`, `--judge-param`, `--judge-header`) is handed to the judge once it is built.
Keys come from the environment only, and go only where the user sent them: to an endpoint the user
named (the `--judge` URL, OPENAI_BASE_URL, ANTHROPIC_BASE_URL) or to the provider's own host.
OPENAI_API_KEY is sent as a bearer token to `openai:` (at whatever OPENAI_BASE_URL says, as OpenAI's
own clients do, else api.openai.com) and to a `--judge` URL only when the URL is https or its host is
loopback (127.0.0.0/8, ::1, localhost): a plain-HTTP judge elsewhere gets no key, since anyone on the
path could read it. ANTHROPIC_API_KEY goes to `anthropic:` (ANTHROPIC_BASE_URL, else
api.anthropic.com). AZURE_OPENAI_API_KEY goes to `azure:` at AZURE_OPENAI_ENDPOINT, over https or
to a loopback host only (`azure`). On the real API hosts a missing key is a `UsageError` naming the variable
(exit 2); local servers need none. Keys live only inside the judge objects.

A battery is shared data, written by someone else: its manifest may choose `builtin`, `openai` or
`anthropic` (they reach only the endpoints above, which the user's environment names), but a judge
URL or a `replay:` file that only the manifest names is refused with a `UsageError` (exit 2) before
anything is sent: such a server would receive the user's key and answers on the battery author's
word alone. Passing the same URL with `--judge` is how a user says they trust it
(`manifest_backend_problem`).

How: `choose_judge` picks the judge name, the parameters are worked out here once, and the backend the
judge name is looked up in the registry (`registry.find_backend`, keyed by kind) and builds the
judge from a `registry.JudgeSetup`; each backend module registers its own builder, so the rules
on a backend's keys and URLs sit beside its wire format (`openai`, `anthropic`; `urls` for where
keys may go).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal

import msgspec

from ...core.errors import UsageError
from ...core.nodes import JudgeDefaults
from ...core.price import Price
from ...core.scorer import ScorerSettings
from .base import DEFAULT_TIMEOUT, Judge
from .decoding import DecodingFlags, decoding_params
from .registry import Backend, JudgeSetup, find_backend
from .request_shape import RequestOptions, RequestShape
from .urls import safe_url

if TYPE_CHECKING:
    import aiohttp

#: The forms `--judge` accepts, for error messages.
JUDGE_FORMS = (
    "builtin, openai:MODEL, anthropic:MODEL, azure:DEPLOYMENT, azure:v1:MODEL, "
    "an http(s):// base URL (with --model), replay:FILE"
)

#: Where a judge choice came from: the `--judge` flag, the manifest's `judge.backend`, the
#: environment (a model named, OPENAI_* or ANTHROPIC_* set), or nothing at all (builtin).
JudgeSource = Literal["flag", "manifest", "environment", "default"]


class JudgeChoice(msgspec.Struct, frozen=True):
    """The judge name chosen and where it came from (the key rule depends on it)."""

    name: str
    source: JudgeSource


def make_judge(
    name: str | None,
    *,
    model: str | None = None,
    manifest_judge: JudgeDefaults | None = None,
    settings: ScorerSettings | None = None,
    session: aiohttp.ClientSession | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    price: Price | None = None,
    request: RequestOptions | None = None,
    decoding: DecodingFlags | None = None,
    notice: Callable[[str], None] | None = None,
) -> Judge:
    """The judge `name` names, chosen and configured as the module docstring says; raises `UsageError`
    for a bad judge name, a missing model, a missing key, or a judge URL or replay file only the manifest
    names (`manifest_backend_problem`). `session` is needed by the HTTP backends;
    `env` defaults to the process environment; `settings` are the scorer's (its judge defaults; the builtin
    judge reads its markers and facet names). A model named with nothing to reach it is a
    `UsageError` (`choose_judge`), never the builtin judge in its place. `notice` is told what the judge
    changes in its requests during the run (`Judge.notice`)."""
    manifest = manifest_judge or JudgeDefaults()
    env = os.environ if env is None else env
    backend, setup = judge_setup(
        name,
        model=model,
        manifest=manifest,
        settings=settings,
        session=session,
        env=env,
        timeout=timeout,
        decoding=decoding,
    )
    judge = backend.build(setup)
    judge.shape_requests(request_shape(request, manifest, settings))
    judge.notice = notice
    price = judge_price(name, model, price, manifest)
    if price is not None:
        # Set here, once for every backend: a price is what the user was billed, not part of a
        # backend's wire format.
        judge.info = msgspec.structs.replace(judge.info, price=price)
    return judge


def judge_price(
    name: str | None, model: str | None, given: Price | None, manifest: JudgeDefaults
) -> Price | None:
    """The price a judge is counted at: `given` (`--price`), else the manifest's `judge.price` only
    for the judge the manifest chose (no `--judge`, no other `--model`). A battery is someone else's:
    its price is for its own judge, and must not price (so lift the `--max-cost` of) a judge the
    user named; such a judge has no price unless the user gives one."""
    if given is not None:
        return given
    named_by_user = bool(name and name.strip()) or (model is not None and model != manifest.model)
    return None if named_by_user else manifest.price


def judge_setup(
    name: str | None,
    *,
    model: str | None,
    manifest: JudgeDefaults,
    settings: ScorerSettings | None,
    session: aiohttp.ClientSession | None,
    env: Mapping[str, str],
    timeout: float = DEFAULT_TIMEOUT,
    decoding: DecodingFlags | None = None,
) -> tuple[Backend, JudgeSetup]:
    """The backend a grading's judge name resolves to (`resolve_backend`) and the setup it is built
    from, the decoding parameters worked out once (`decoding.decoding_params`): what `make_judge`
    builds and the dry run's `identity.judge_identity` names."""
    choice, backend, argument = resolve_backend(name, model=model, manifest_judge=manifest, env=env)
    params = decoding_params(decoding or DecodingFlags(), manifest, (settings or ScorerSettings()).judge)
    return backend, JudgeSetup(
        name=choice.name,
        argument=argument,
        model=model or manifest.model,
        temperature=params.temperature,
        max_tokens=params.max_tokens,
        reasoning_effort=params.reasoning_effort,
        thinking_budget=params.thinking_budget,
        env=env,
        timeout=timeout,
        session=session,
        settings=settings,
        prompt_cache=manifest.prompt_cache is not False,
    )


def request_shape(
    request: RequestOptions | None, manifest: JudgeDefaults, settings: ScorerSettings | None
) -> RequestShape:
    """What the user adds to a judge's requests: `request` (the command line), its structured mode
    first found of the flag, the manifest's `judge.structured` and off, with the scorer's schema."""
    from ...core.reply_schema import reply_schema

    request = request or RequestOptions()
    mode = request.structured or manifest.structured or "off"
    return RequestShape(request, reply_schema((settings or ScorerSettings()).facets), structured=mode)


def resolve_backend(
    name: str | None, *, model: str | None, manifest_judge: JudgeDefaults, env: Mapping[str, str]
) -> tuple[JudgeChoice, Backend, str]:
    """The judge chosen (`choose_judge`), its backend and the judge name's argument after the backend's
    prefix; raises `UsageError` for a judge URL or replay file only the manifest names and for an
    unknown judge name. `make_judge` and the dry run's `identity.judge_identity` both start here."""
    choice = choose_judge(name, model=model, manifest_judge=manifest_judge, env=env)
    if choice.source == "manifest":
        problem = manifest_backend_problem(choice.name)
        if problem is not None:
            raise UsageError(problem)
    found = find_backend(choice.name)
    if found is None:
        raise UsageError(f"unknown judge {choice.name!r}; use one of: {JUDGE_FORMS}")
    backend, argument = found
    return choice, backend, argument


def choose_judge(
    name: str | None,
    *,
    model: str | None = None,
    manifest_judge: JudgeDefaults | None = None,
    env: Mapping[str, str] | None = None,
) -> JudgeChoice:
    """The judge name the flags, the manifest and the environment choose (rules 1-4 of the module
    docstring) and where it came from; raises `UsageError` naming the flag and the variables to set
    when a model is named and nothing could be asked for it."""
    manifest = manifest_judge or JudgeDefaults()
    env = os.environ if env is None else env
    given: tuple[tuple[str | None, JudgeSource], ...] = ((name, "flag"), (manifest.backend, "manifest"))
    for value, source in given:
        if value and value.strip():
            return JudgeChoice(value.strip(), source)
    named = model or manifest.model
    if not named:
        return JudgeChoice("builtin", "default")
    if env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY"):
        return JudgeChoice("openai", "environment")
    if env.get("ANTHROPIC_API_KEY"):
        return JudgeChoice("anthropic", "environment")
    where = "--model" if model else "battery.yaml judge.model"
    raise UsageError(
        f"judge model {named!r} is named ({where}) but nothing reaches it: set OPENAI_API_KEY (or "
        "OPENAI_BASE_URL for a compatible server) or ANTHROPIC_API_KEY, or pass --judge "
        "openai:MODEL, anthropic:MODEL or a server URL; the builtin lexical judge grades only when "
        f"no model is named (drop {where}, or pass --judge builtin)"
    )


def manifest_backend_problem(backend: str) -> str | None:
    """Why a manifest may not choose the judge `backend` on its own, or None when it may.

    `builtin`, `openai[:MODEL]` and `anthropic[:MODEL]` reach only this process, the endpoints the
    user's environment names or the providers' own hosts. A URL would get the user's key and
    answers, and a `replay:` file is read from wherever the manifest points, both on the battery
    author's word alone: the user must name them with `--judge`. Anything else is left for
    `make_judge` to reject as an unknown judge."""
    name = backend.strip()
    kind = name.partition(":")[0].lower()
    if kind in ("http", "https"):
        shown = safe_url(name)
        return (
            f"battery.yaml names the judge URL {shown} (judge.backend); tabench sends keys and answers "
            f"only to a judge you name yourself: to trust this one, pass --judge {shown}"
        )
    if kind == "replay":
        return (
            "battery.yaml names a replay file (judge.backend: replay:...); a battery may not choose "
            "which file is read as results: pass --judge replay:FILE instead"
        )
    return None

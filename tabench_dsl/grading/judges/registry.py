"""The judge registry: which backend a `--judge` name names, and how that backend builds its judge.

Backends are keyed by kind. Each backend module registers a builder for its kind with
`@register_judge(kind, heads=...)`, the heads being the words before a judge name's first `:` that name
it (`openai:MODEL` names the kind `openai`; `https://...` names the kind `url`). A builder takes the
`JudgeSetup` the factory prepared (the judge name's argument, the model, the decoding parameters, the
HTTP session, the environment, ...) and returns a configured `base.Judge`, or raises `UsageError`.

The shipped backends are imported only when a judge name names them (`_HOMES`), so grading with the
builtin judge never loads the HTTP backends, and the other way round:

    kind        heads           module      argument
    builtin     builtin         builtin     none (`builtin:x` is an unknown judge)
    replay      replay          replay      the results file
    openai      openai          openai      the model (optional)
    anthropic   anthropic       anthropic   the model (optional)
    url         http, https     openai      the whole judge name, a base URL
    azure       azure           azure       the deployment, or `v1:MODEL`

To add a backend: a module that subclasses `base.Judge` and registers a builder (and, for the dry
run, how it names a judge without building it: `@register_identity(kind)`, with
`carries_request_shape=False` when, like `builtin` and `replay`, its judge sends no request the
user's additions could go into), and a line in `_HOMES` for it (a module imported by other means
registers itself just the same).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import msgspec

from ...core.errors import JudgeError, UsageError
from ...core.scorer import ScorerSettings
from .base import Judge, JudgeIdentity, JudgeParams

if TYPE_CHECKING:
    import aiohttp

#: What a builder is given as its argument: nothing at all (the judge name is the head alone), the text
#: after the head's `:` (maybe empty), or the whole judge name (a URL).
Argument = Literal["none", "after-colon", "whole"]


@dataclass(frozen=True)
class JudgeSetup:
    """Everything a builder may need, as `factory.make_judge` worked it out.

    `argument` is the part of the judge name the backend reads (see `Argument`); `model` is the model the
    flags or the manifest name (None when neither does); `temperature` and `max_tokens` are the
    decoding parameters, first found of the flags, the manifest, the scorer and the defaults;
    `settings` are the scorer's checked settings; `prompt_cache` says whether to send the
    provider's prompt-cache hint."""

    name: str
    argument: str
    model: str | None
    temperature: float | None
    max_tokens: int
    env: Mapping[str, str]
    timeout: float
    session: aiohttp.ClientSession | None = None
    settings: ScorerSettings | None = None
    #: Whether an HTTP judge sends its provider's prompt-cache hint (the manifest's
    #: `judge: {prompt_cache: false}` turns it off).
    prompt_cache: bool = True
    #: The reasoning controls (`decoding.Decoding`): OpenAI's effort, Anthropic's thinking budget.
    reasoning_effort: str | None = None
    thinking_budget: int | None = None

    def params(self, needed_by: str, *, model: str | None = None) -> JudgeParams:
        """The decoding parameters for `model` (default: the one the flags or manifest name);
        a `UsageError` naming `--judge {needed_by}` when there is no model."""
        chosen = model or self.model
        if not chosen:
            raise UsageError(f"--judge {needed_by} needs a model: --model M, or judge.model in battery.yaml")
        return JudgeParams(
            model=chosen,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            reasoning_effort=self.reasoning_effort,
            thinking_budget=self.thinking_budget,
        )

    def http_session(self) -> aiohttp.ClientSession:
        """The HTTP session an HTTP backend sends through (the caller's, shared by all calls)."""
        if self.session is None:
            raise JudgeError("an HTTP judge needs an aiohttp session")
        return self.session


#: A backend's constructor: the setup in, a configured judge out.
Builder = Callable[[JudgeSetup], Judge]
#: A backend's identity for the dry run: the same setup (with no session: nothing is built, nothing
#: sent, no key needed), the `JudgeIdentity` the judge `Builder` makes would have.
Identifier = Callable[[JudgeSetup], JudgeIdentity]


@dataclass(frozen=True)
class Backend:
    """A registered judge kind: its builder and the part of the judge name it reads."""

    kind: str
    build: Builder
    argument: Argument


#: The module (in this package) that registers the backend of each judge name's head, imported on first use.
_HOMES: dict[str, str] = {
    "builtin": ".builtin",
    "replay": ".replay",
    "openai": ".openai",
    "anthropic": ".anthropic",
    "http": ".openai",
    "https": ".openai",
    "azure": ".azure",
}

_BACKENDS: dict[str, Backend] = {}
_KIND_OF_HEAD: dict[str, str] = {}
_IDENTIFIERS: dict[str, Identifier] = {}
#: The kinds whose judges send no request what the user adds could go into (`builtin`, `replay`).
_UNSHAPED: set[str] = set()


def register_judge(
    kind: str, *, heads: tuple[str, ...] | None = None, argument: Argument = "after-colon"
) -> Callable[[Builder], Builder]:
    """Register the decorated builder as the backend of `kind`, named in a judge name by `heads`
    (default: the kind itself) and given the `argument` part of the judge name."""

    def register(build: Builder) -> Builder:
        _BACKENDS[kind] = Backend(kind, build, argument)
        for head in heads or (kind,):
            _KIND_OF_HEAD[head] = kind
        return build

    return register


def register_identity(kind: str, *, carries_request_shape: bool = True) -> Callable[[Identifier], Identifier]:
    """Register the decorated function as how the dry run names a judge of `kind` without building
    it (a backend without one cannot be dry-run). `carries_request_shape` says whether the judge's
    requests carry what the user adds (`Judge.shape_requests`), so that its identity names their
    digest as its reply cache keys do; False for a judge that sends no request (builtin, replay)."""

    def register(identify: Identifier) -> Identifier:
        _IDENTIFIERS[kind] = identify
        if carries_request_shape:
            _UNSHAPED.discard(kind)
        else:
            _UNSHAPED.add(kind)
        return identify

    return register


def identify(backend: Backend, setup: JudgeSetup, *, request_shape: str = "") -> JudgeIdentity:
    """The identity a judge of `backend` built from `setup` would have (its registered
    `Identifier`), naming `request_shape` (the digest of what the user adds to every request) when
    its requests carry it; `UsageError` for a backend that registered none."""
    identifier = _IDENTIFIERS.get(backend.kind)
    if identifier is None:
        raise UsageError(f"the {backend.kind} judge cannot be named without building it (no --dry-run)")
    found = identifier(setup)
    if backend.kind in _UNSHAPED:
        return found
    return msgspec.structs.replace(found, request_shape=request_shape)


def find_backend(name: str) -> tuple[Backend, str] | None:
    """The backend `name` names and the argument it gets, or None when it names none. The module of
    a shipped backend is imported here, the first time a judge name names it; a broken install that lacks
    it is a `JudgeError` saying so."""
    head, colon, rest = name.partition(":")
    if head not in _KIND_OF_HEAD and head in _HOMES:
        try:
            importlib.import_module(_HOMES[head], __package__)
        except ImportError as exc:  # the backends ship with tabench; only a broken install lacks one
            raise JudgeError(f"the {head} judge is not available ({exc}); choose one with --judge") from None
    kind = _KIND_OF_HEAD.get(head)
    if kind is None:
        return None
    backend = _BACKENDS[kind]
    if backend.argument == "none":
        return (backend, "") if not colon else None
    return backend, name if backend.argument == "whole" else rest

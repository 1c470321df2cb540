"""Which judge a grading would ask, worked out without building it: `judge_identity`.

`grade --dry-run` looks the first asks up in the reply cache, whose key names the judge's backend,
endpoint and decoding parameters (`cache_keys.cache_key`). It must do so without a key in the
environment, without an HTTP session and without reaching anything, so it cannot build the judge
(`factory.make_judge` refuses a real API host without its key). This module names the judge the
same way the backends do, from the same parts: the backend and setup the factory works out
(`factory.judge_setup`, which `make_judge` builds from too) and the identity each backend registers
beside its builder (`registry.register_identity`), from its own base URL rules.
`tests/grading/test_dry_run.py` checks that it agrees with the judge `make_judge` builds, backend by backend.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...core.errors import UsageError
from ...core.nodes import JudgeDefaults
from ...core.scorer import ScorerSettings
from .base import JudgeIdentity
from .decoding import DecodingFlags
from .factory import judge_setup, request_shape
from .registry import identify
from .request_shape import RequestOptions


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
    backend, setup = judge_setup(
        name, model=model, manifest=manifest, settings=settings, session=None, env=env, decoding=decoding
    )
    shape = request_shape(request, manifest, settings).digest
    try:
        return identify(backend, setup, request_shape=shape)
    except ValueError as exc:
        raise UsageError(f"--judge: {exc}") from None

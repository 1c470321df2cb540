"""The SQLite reply cache: keys, batching, persistence, sharing between processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tabench_dsl.core.records import JudgeInfo, Tokens
from tabench_dsl.grading.cache import DEFAULT_PATH, ReplyCache, cache_key, open_reply_cache, resolve_path
from tabench_dsl.grading.judges.base import JudgeParams, Message

MSGS = [Message("system", "S"), Message("user", "-- CANDIDATE ANSWER --\nx")]


def test_key_depends_on_everything_that_decides_a_reply() -> None:
    base = cache_key("openai", JudgeParams("m"), MSGS, "first")
    assert len(base) == 64
    assert base == cache_key("openai", JudgeParams("m", 0.0, 300), list(MSGS), "first")
    others = {
        cache_key("anthropic", JudgeParams("m"), MSGS, "first"),
        cache_key("openai", JudgeParams("m2"), MSGS, "first"),
        cache_key("openai", JudgeParams("m", temperature=0.5), MSGS, "first"),
        cache_key("openai", JudgeParams("m", max_tokens=10), MSGS, "first"),
        cache_key("openai", JudgeParams("m"), [MSGS[0], Message("user", "y")], "first"),
        cache_key("openai", JudgeParams("m"), [Message("user", "S"), MSGS[1]], "first"),
        # The format re-ask sends the same messages but must not be served the first reply.
        cache_key("openai", JudgeParams("m"), MSGS, "format"),
        # The same model at another server is another judge.
        cache_key("openai", JudgeParams("m"), MSGS, "first", endpoint="http://127.0.0.1:8000/v1"),
    }
    assert base not in others and len(others) == 8
    at_vllm = cache_key("openai", JudgeParams("m"), MSGS, "first", endpoint="http://127.0.0.1:8000/v1")
    assert at_vllm != cache_key(
        "openai", JudgeParams("m"), MSGS, "first", endpoint="https://api.openai.com/v1"
    )


def test_put_is_seen_at_once_and_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "c.sqlite"
    with ReplyCache(path) as cache:
        assert cache.get("k") is None
        cache.put("k", '{"verdict": "pass"}', Tokens(10, 3))
        got = cache.get("k")
        assert got is not None and got.content == '{"verdict": "pass"}' and got.tokens == Tokens(10, 3)
        assert (cache.hits, cache.misses) == (1, 1)
    with ReplyCache(path) as cache:
        got = cache.get("k")
        assert got is not None and got.tokens.total == 13


def test_resolve_path_flag_then_env_then_default(tmp_path: Path) -> None:
    assert resolve_path("x.sqlite", {"TABENCH_CACHE": "y.sqlite"}) == Path("x.sqlite")
    assert resolve_path(None, {"TABENCH_CACHE": "y.sqlite"}) == Path("y.sqlite")
    assert resolve_path(None, {}) == DEFAULT_PATH == Path(".tabench/cache.sqlite")


def test_two_processes_share_one_cache_file(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    script = textwrap.dedent(
        """
        import sys
        from tabench_dsl.grading.cache import ReplyCache
        from tabench_dsl.core.records import JudgeInfo, Tokens
        tag = sys.argv[2]
        with ReplyCache(sys.argv[1]) as cache:
            for i in range(400):
                cache.put(f"{tag}-{i}", f"reply {tag} {i}", Tokens(i, 1))
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), tag]) for tag in ("a", "b")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    with ReplyCache(path) as cache:
        for tag in ("a", "b"):
            for i in (0, 199, 399):
                got = cache.get(f"{tag}-{i}")
                assert got is not None and got.content == f"reply {tag} {i}"


def test_deterministic_judges_get_no_cache_file(tmp_path: Path) -> None:
    builtin = JudgeInfo("builtin", "lexical-1", language_model=False)
    replay = JudgeInfo("replay", "gpt-x")
    remote = JudgeInfo("openai", "gpt-x", endpoint="http://127.0.0.1:1/v1")
    assert (builtin.deterministic, replay.deterministic, remote.deterministic) == (True, True, False)
    path = tmp_path / "c.sqlite"
    assert open_reply_cache(path, builtin) is None and open_reply_cache(path, replay) is None
    assert not path.exists()
    assert open_reply_cache(None, remote) is None  # --no-cache
    cache = open_reply_cache(path, remote)
    assert isinstance(cache, ReplyCache) and path.is_file()
    cache.close()

"""The SQLite reply cache: keys, batching, persistence, sharing between processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tabench_dsl.core.records import JudgeInfo, Tokens
from tabench_dsl.grading.cache import ReplyCache, cache_key, default_path, open_reply_cache, resolve_path
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
    assert resolve_path(None, {"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "tabench" / "cache.sqlite"
    assert default_path({}) == Path.home() / ".cache" / "tabench" / "cache.sqlite"


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


#: The table as cache files made before the prompt-cache counts hold it.
OLD_SCHEMA = """
CREATE TABLE replies (
    key TEXT PRIMARY KEY,
    content TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    created REAL NOT NULL
) WITHOUT ROWID
"""


def _old_cache_file(path: Path) -> None:
    import sqlite3

    db = sqlite3.connect(path)
    with db:
        db.execute(OLD_SCHEMA)
        db.execute("INSERT INTO replies VALUES ('old', 'old reply', 812, 41, 0.0)")
    db.close()


def test_prompt_cache_counts_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    tokens = Tokens(prompt=1200, completion=9, cached_prompt=1024, cache_write=64)
    with ReplyCache(path) as cache:
        cache.put("k", "reply", tokens)
    with ReplyCache(path) as cache:
        got = cache.get("k")
        assert got is not None and got.tokens == tokens


def test_an_old_cache_file_is_read_and_gains_the_new_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _old_cache_file(path)
    with ReplyCache(path) as cache:
        old = cache.get("old")
        assert old is not None and (old.content, old.tokens) == ("old reply", Tokens(812, 41))
        cache.put("new", "new reply", Tokens(100, 2, cached_prompt=64))
    with ReplyCache(path) as cache:
        new = cache.get("new")
        assert new is not None and new.tokens == Tokens(100, 2, cached_prompt=64)
        assert cache.get("old") is not None


def test_two_processes_opening_one_old_file_migrate_it_once(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _old_cache_file(path)
    script = textwrap.dedent(
        """
        import sys
        from tabench_dsl.grading.cache import ReplyCache
        from tabench_dsl.core.records import Tokens
        with ReplyCache(sys.argv[1]) as cache:
            cache.put(sys.argv[2], "r", Tokens(5, 1, cached_prompt=3, cache_write=1))
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), tag]) for tag in ("a", "b", "c")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    with ReplyCache(path) as cache:
        for tag in ("a", "b", "c"):
            got = cache.get(tag)
            assert got is not None and got.tokens == Tokens(5, 1, cached_prompt=3, cache_write=1)

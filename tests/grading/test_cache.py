"""The SQLite reply cache: keys, batching, persistence, sharing between processes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tabench_dsl.core.records import JudgeInfo, Tokens
from tabench_dsl.grading.cache import ReplyCache, default_path, open_reply_cache, resolve_path
from tabench_dsl.grading.cache_keys import cache_key
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


def test_a_key_is_the_sha256_of_the_requests_canonical_json() -> None:
    # Written out here with the standard library: sorted keys, no spaces, UTF-8. Keys made before
    # the key was hashed in parts must keep matching, so the two digests are pinned too.
    messages = [Message("system", "S \u00e9"), Message("user", "-- CANDIDATE ANSWER --\nx")]
    canonical = {
        "attempt": "first",
        "backend": "openai",
        "endpoint": "http://127.0.0.1:8000/v1",
        "messages": [["system", "S \u00e9"], ["user", "-- CANDIDATE ANSWER --\nx"]],
        "model": "m",
        "params": {"max_tokens": 300, "temperature": 0.0},
    }
    text = json.dumps(canonical, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    first = cache_key("openai", JudgeParams("m"), messages, "first", endpoint="http://127.0.0.1:8000/v1")
    assert first == hashlib.sha256(text.encode()).hexdigest()
    assert first == "694aae54624d8226ad9ee1b5a781311e6622bac89ff6ba47110705246c025566"
    shaped = cache_key("openai", JudgeParams("m", reasoning_effort="low"), messages, "format", shape="d" * 8)
    assert shaped == "c6b20d333d01709d9f620fca99e9c8720fc84c21b4aa64f4bae247729bdeb1dd"
    # The same SYSTEM again (its hashed part reused) and another after it: the same keys as alone.
    again = [messages[0], Message("user", "y")]
    assert cache_key("openai", JudgeParams("m"), again, "first") == cache_key(
        "openai", JudgeParams("m"), list(again), "first"
    )
    assert cache_key("openai", JudgeParams("m"), [], "first") != cache_key(
        "openai", JudgeParams("m"), messages[:1], "first"
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

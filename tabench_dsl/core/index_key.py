"""The secret that signs what a results index holds (`results_index`).

An index file sits beside a results file, in a folder anyone may have filled (a cloned benchmark,
an unpacked archive), so what it says cannot be believed because it says it: a well-formed index
naming the right file could still carry made-up counts. Every value tabench writes into an index is
signed with HMAC-SHA256 under a key only this user can read, `index.key` in tabench's cache folder
(`$XDG_CACHE_HOME/tabench`, else `~/.cache/tabench`, made 0700; the key 0600, written once with
`O_EXCL`, never through a link). A value whose signature does not check is never used: the command
reads the results file instead. Where no key can be had (a read-only home), no index is used.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from .errors import UsageError
from .safe_open import open_new, open_no_link

#: The key's length in bytes (HMAC-SHA256's block is 64; 32 random bytes is its strength).
KEY_BYTES = 32
KEY_NAME = "index.key"


def key_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the signing key lives: `index.key` in `$XDG_CACHE_HOME/tabench`, else `~/.cache/tabench`."""
    env = os.environ if env is None else env
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "tabench" / KEY_NAME


def index_key(env: Mapping[str, str] | None = None) -> bytes | None:
    """This user's signing key, made on first use; None when it cannot be read or made (then no
    index is trusted or written)."""
    path = key_path(env)
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    except (OSError, UsageError):  # unreadable, or a link in its place
        return None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = open_new(path, 0o600)
    except FileExistsError:  # another process made it a moment ago
        return _read_or_none(path)
    except (OSError, UsageError):
        return None
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(KEY_BYTES))
    return _read_or_none(path)


def _read_key(path: Path) -> bytes | None:
    """The key's bytes; None when the file is not one this module wrote (wrong length, another
    user's: a key others can write signs nothing)."""
    fd = open_no_link(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        key = f.read(KEY_BYTES + 1)
    if len(key) != KEY_BYTES or info.st_uid != os.getuid() or info.st_mode & 0o022:
        return None
    return key


def _read_or_none(path: Path) -> bytes | None:
    try:
        return _read_key(path)
    except (OSError, UsageError):  # a link, a race, a refused read: no key, no index
        return None


def sign(key: bytes, *parts: bytes) -> bytes:
    """The HMAC-SHA256 of `parts`, each length-prefixed so no two part lists sign alike."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for part in parts:
        mac.update(len(part).to_bytes(8, "big"))
        mac.update(part)
    return mac.digest()


def signed_by(key: bytes, signature: object, *parts: bytes) -> bool:
    """Whether `signature` is `sign(key, *parts)` (compared in constant time)."""
    return isinstance(signature, bytes) and hmac.compare_digest(signature, sign(key, *parts))

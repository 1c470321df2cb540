"""Judge URLs: how one is shown, which are accepted, and where an API key may go.

Keys come from the environment only and go only where the user sent them (the whole rule is in
`factory`'s docstring). Two facts decide it, one function each: whether a base URL is a provider's
own API host, where a missing key is a usage error before anything is sent (`host_of`), and whether
a URL judge may be sent OPENAI_API_KEY at all (`url_gets_key`). A URL is shown, in labels and
messages, without credentials, query or fragment (`safe_url`), and one carrying credentials is
refused (`split_http_url`). Standard library only, so the factory can apply these rules without
loading an HTTP backend.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import SplitResult, urlsplit, urlunsplit

#: OpenAI's API host: `openai:` there without OPENAI_API_KEY is a usage error.
OPENAI_HOST = "api.openai.com"
#: Anthropic's API host: `anthropic:` there without ANTHROPIC_API_KEY is a usage error.
ANTHROPIC_HOST = "api.anthropic.com"


def host_of(url: str) -> str:
    """The host name of `url`, lowercased ("" when it has none)."""
    return (urlsplit(url.strip()).hostname or "").lower()


def url_gets_key(url: str) -> bool:
    """Whether a URL judge at `url` may be sent OPENAI_API_KEY: only over https or to a loopback
    host (127.0.0.0/8, ::1, localhost), where no one between us and the server can read it."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() == "https":
        return True
    host = (parts.hostname or "").lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def safe_url(url: str) -> str:
    """`url` without user info, query or fragment: fit for a label or an error message."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def split_http_url(url: str, key_env: str) -> SplitResult:
    """The parts of an http(s) base URL; `ValueError` for any other URL, and for one carrying
    credentials (they would end up in labels: the key belongs in `key_env`)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {safe_url(url)!r}")
    if parts.username or parts.password:
        raise ValueError(f"put the key in {key_env}, not in the URL")
    return parts

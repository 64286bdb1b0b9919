"""Keeping credentials out of everything reinloop stores or prints.

An endpoint or database URL may carry credentials: a user and password
(``http://user:password@host/v1``, ``postgresql://user:password@host/db``) or a
secret query parameter (``?api_key=...``, ``?token=...``, ``?sig=...``).
:func:`redact_url` is the one place they are removed; every URL that reaches
a table, a message, an event or a report goes through it. The redacted parts
become :data:`REDACTED`, so a reader sees that there was a credential and
:func:`is_redacted` can tell a stored URL that needs its credentials again
(``reinloop resume`` then asks for ``--base-url``, it never reads them back).

A secret inside the path (``/bot<token>/``) cannot be told from a path and is
kept: pass such keys through the provider's key variable instead.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

REDACTED = "***"
"""What a removed credential is replaced with."""

SECRET_WORDS = ("key", "token", "secret", "passw", "pwd", "signature", "credential", "auth", "session", "cookie")
"""A query parameter whose name (lower case, without ``-`` and ``_``) contains one of these holds a secret."""
SECRET_NAMES = frozenset({"sig", "pass", "code", "jwt", "bearer"})
"""Short parameter names that hold a secret when they are the whole name."""


def is_secret_name(name: str) -> bool:
    """True for a parameter name that carries a credential: api_key, X-Api-Key, access_token, sig ..."""
    flat = re.sub(r"[^a-z0-9]", "", name.lower())
    return flat in SECRET_NAMES or any(word in flat for word in SECRET_WORDS)


def _redact_pairs(text: str) -> str:
    """A query string (or fragment) with the values of secret parameters replaced."""
    pairs = parse_qsl(text, keep_blank_values=True) if "=" in text else []
    if not any(is_secret_name(k) for k, _ in pairs):
        return text
    return "&".join(
        f"{quote(k, safe='-_.~[]')}={REDACTED if is_secret_name(k) else quote(v, safe='-_.~:/,')}" for k, v in pairs
    )


def redact_url(url: str, *, keep_user: bool = False) -> str:
    """``url`` without its credentials: userinfo and secret query parameters become :data:`REDACTED`.

    ``keep_user`` keeps a user name that comes with a password and drops the
    password (``postgresql://postgres@host/db``), for databases where the user
    name is a role, not a secret; a lone ``token@host`` is redacted either way
    unless ``keep_user`` is set. Text that is not a URL comes back unchanged.
    """
    if not isinstance(url, str) or "://" not in url:
        return url
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
    except ValueError:  # a broken URL (an unclosed '['): hide everything but the scheme
        return url.split("://", 1)[0] + "://" + REDACTED
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{host}" if keep_user and user else f"{REDACTED}@{host}"
    return urlunsplit(parts._replace(netloc=netloc, query=_redact_pairs(parts.query),
                                     fragment=_redact_pairs(parts.fragment)))


def origin(url: str | None) -> str | None:
    """Only the scheme, host and port of ``url`` (``http://127.0.0.1:8080``): no user, password, path or query."""
    if not url or "://" not in url:
        return None
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def is_redacted(url: str | None) -> bool:
    """True for a URL that had credentials removed by :func:`redact_url`."""
    return bool(url) and REDACTED in str(url)


MIN_SECRET = 4
"""Shorter credential values are not searched for in free text (they would match ordinary words)."""


def url_secrets(url: str | None) -> list[str]:
    """The credential values inside ``url`` (password, a lone user name, secret parameters), longest first."""
    if not url or "://" not in url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return [url]
    found: list[str] = []
    if "@" in parts.netloc:
        user, _, password = parts.netloc.rsplit("@", 1)[0].partition(":")
        found.append(password or user)  # a user name with a password is a name; alone it is a token
    for text in (parts.query, parts.fragment):
        found += [v for k, v in parse_qsl(text, keep_blank_values=True) if is_secret_name(k) and v]
    variants = {form for value in found for form in (value, unquote(value), quote(unquote(value), safe=""))}
    return sorted((v for v in variants if len(v) >= MIN_SECRET), key=len, reverse=True)


def scrub(text: str, url: str | None) -> str:
    """``text`` with ``url`` and every credential inside it replaced (for a client's error message)."""
    if not url:
        return text
    text = text.replace(url, redact_url(url))
    for secret in url_secrets(url):
        text = text.replace(secret, REDACTED)
    return text


URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")


def redact_urls(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, strings) with every URL in its strings redacted."""
    if isinstance(value, str):
        return URL.sub(lambda m: redact_url(m.group()), value) if "://" in value else value
    if isinstance(value, dict):
        return {k: redact_urls(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_urls(v) for v in value]
    return value

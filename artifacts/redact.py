"""What may be shown of a URL: user info (``scheme://user:secret@host``) never reaches a log, a response or stderr.

An endpoint URL is the one place a user may type a secret into gitrag's own arguments
(``--endpoint-url http://key:secret@minio:9000``).  S3 requests are signed with the AWS credential
chain, so the user info has no use there: :func:`split_userinfo` takes it off before the URL goes to
the SDK (whose messages quote the endpoint) and :func:`remember_secret` records it, so that
:func:`redact` masks it in any text, in whatever URL shape it appears.  The JSON log formatter
(:mod:`artifacts.logs`) runs every line through :func:`redact`; exception messages that quote a URL
are redacted where they are built.

Nothing here raises: a URL that does not parse (a secret holding ``/``, ``@`` or ``:``) is still
split and masked, never passed to :func:`urllib.parse.urlsplit`'s ``port``.
"""

from __future__ import annotations

import re
import threading
from urllib.parse import quote, unquote

MASK = "***"

_secrets: set[str] = set()
_secrets_lock = threading.Lock()

# ``scheme://`` then user info up to the last ``@`` before white space or a quote: greedy on purpose,
# so that a secret holding ``/`` or ``@`` (which no parser reads as user info) is masked whole.
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^\s\"'`<>]*@)")


def split_userinfo(url: str) -> tuple[str, str | None]:
    """Split ``url`` into ``(url without user info, user info or None)``; never raises.

    The user info ends at the last ``@`` of the authority (before the first ``/``, ``?`` or ``#``);
    when the authority holds none but the rest of the URL does, at the last ``@`` of the URL (a
    secret with an unencoded ``/``: ``http://key:se/cret@host:9000``).  Endpoint URLs carry no
    ``@`` in their paths, so nothing of a host or path is lost.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url, None
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    cut = authority.rfind("@") if "@" in authority else rest.rfind("@")
    return f"{scheme}://{rest[cut + 1:]}", rest[:cut]


def remember_secret(secret: str | None) -> None:
    """Mask ``secret`` (and its percent-encoded and -decoded forms, and its password part) in :func:`redact`."""
    if not secret:
        return
    forms = {secret, unquote(secret), quote(secret, safe="")}
    _user, colon, password = secret.partition(":")
    if colon and len(password) >= 4:
        forms |= {password, unquote(password), quote(password, safe="")}
    with _secrets_lock:
        _secrets.update(f for f in forms if len(f) >= 4)


def redact(text: str) -> str:
    """``text`` with the user info of every URL and every remembered secret replaced by ``***``; never raises."""
    if not text:
        return text
    out = _USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
    with _secrets_lock:
        secrets = sorted(_secrets, key=len, reverse=True)  # the longest form first: no half-masked secret
    for secret in secrets:
        out = out.replace(secret, MASK)
    return out


def safe_url(url: str | None) -> str | None:
    """``url`` without user info, for display (``https://key:secret@host:9000`` -> ``https://host:9000``)."""
    if not url:
        return None
    return redact(split_userinfo(url)[0])


__all__ = ["MASK", "redact", "remember_secret", "safe_url", "split_userinfo"]

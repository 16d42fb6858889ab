"""Server configuration: API keys, CORS, limits, time-travel cache and webhook/sync settings.

Sources, later ones winning: defaults, a TOML file (``gitrag serve --config server.toml``), then
the environment (``GITRAG_SEARCH_KEY``, ``GITRAG_ADMIN_KEY``, ``GITRAG_SYNC_KEY``,
``GITRAG_WEBHOOK_SECRET``, ``GITRAG_CORS_ORIGINS`` comma-separated).  Example file::

    search_key = "...at least 32 characters..."
    admin_key = "...another one..."
    cors_origins = ["https://chat.example.org"]
    rate_limit_per_minute = 600

    [webhook]
    secret = "...a third one..."
    repository = "owner/wiki"        # full name as the forge sends it
    branch = "main"
    remote = "https://git.example.org/owner/wiki.git"
    mirror = "/srv/gitrag/mirror.git"  # default: <store>/mirror.git

Rules (checked by :meth:`ServerConfig.check`, the server refuses to start otherwise): every
configured key or secret is at least 32 characters and they are pairwise distinct; without any
key the server binds only to a loopback address.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError

MIN_KEY_CHARS = 32


class ConfigError(ValueError):
    """The server configuration is invalid; the message never contains a key."""


class WebhookConfig(BaseModel):
    """Remote pushes: the forge repository and branch accepted, where to fetch from and the local mirror."""

    model_config = {"extra": "forbid"}

    secret: str | None = None
    repository: str | None = Field(None, description="owner/name as sent in the payload's repository.full_name")
    branch: str = "main"
    remote: str | None = Field(None, description="URL or path fetched into the mirror")
    mirror: str | None = Field(None, description="bare mirror repository; default <store>/mirror.git")
    max_body_bytes: int = Field(1024 * 1024, ge=1024)


class AnswerConfig(BaseModel):
    """``[answer]`` table: the default generator of ``/answer`` and its provider settings.

    ``generator``: ``extractive`` (default, no model), ``openai`` or ``anthropic``; the provider
    keys (``base_url``, ``model``, ``api_key``, ``connect_timeout``, ``read_timeout`` in seconds,
    ``max_tokens``, ``temperature``) are passed to :func:`query.answer.generators.make_generator`, with
    ``GITRAG_LLM_*`` / ``ANTHROPIC_API_KEY`` filling what is left out.  ``coverage_threshold``: share
    (0..1) of the question's content words the delivered claims' evidence must cover;
    ``cache_entries`` / ``cache_megabytes``: answer cache bounds.
    """

    model_config = {"extra": "forbid"}

    generator: Literal["extractive", "openai", "anthropic"] = "extractive"
    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    connect_timeout: float | None = Field(None, gt=0)
    read_timeout: float | None = Field(None, gt=0)
    max_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0)
    coverage_threshold: float = Field(0.20, ge=0, le=1)
    cache_entries: int = Field(256, ge=0)
    cache_megabytes: int = Field(16, ge=0)

    def provider_settings(self) -> dict[str, Any]:
        """Return the settings :func:`query.answer.generators.make_generator` reads (unset ones left out)."""
        data = self.model_dump(exclude={"generator", "coverage_threshold", "cache_entries", "cache_megabytes"},
                               exclude_none=True)
        if self.api_key is not None:
            data["api_key"] = self.api_key.get_secret_value()
        return data


class ServerConfig(BaseModel):
    """Everything ``gitrag serve`` can be told besides the store, host and port."""

    model_config = {"extra": "forbid"}

    search_key: str | None = None
    admin_key: str | None = None
    sync_key: str | None = Field(None, description="defaults to the admin key's permission only")
    cors_origins: list[str] = Field(default_factory=list)
    max_body_bytes: int = Field(64 * 1024, ge=1024, description="bytes, JSON endpoints")
    rate_limit_per_minute: int = Field(600, ge=1, description="requests per minute per key (or client address)")
    rate_limit_burst: int = Field(60, ge=1)
    auth_failures_per_minute: int = Field(10, ge=1, description="failed key attempts per minute per client address")
    auth_failures_burst: int = Field(20, ge=1, description="failed key attempts allowed at once per client address")
    poll_interval: float = Field(2.0, gt=0, description="seconds between CURRENT checks")
    cache_bundles: int = Field(4, ge=1, description="historical bundles kept open (count)")
    cache_megabytes: int = Field(1024, ge=1, description="historical bundles kept open (approximate size)")
    spawn_worker: bool = Field(True, description="start `gitrag worker` when a sync job is queued")
    header_timeout: float = Field(30.0, gt=0, description="seconds a new connection may take to send its first "
                                  "request's headers (later requests: keepalive_timeout) before it is closed")
    body_timeout: float = Field(30.0, gt=0, description="seconds a request may take to send its whole body")
    keepalive_timeout: float = Field(30.0, gt=0, description="seconds an idle keep-alive connection stays open")
    max_connections: int = Field(1024, ge=1, description="open connections at once, in total (per process)")
    max_connections_per_address: int = Field(64, ge=1, description="open connections at once per client address "
                                             "(trusted proxies are exempt)")
    trusted_proxies: list[str] = Field(default_factory=list, description="addresses or CIDR networks of reverse "
                                       "proxies whose X-Forwarded-For names the client")
    fallback_verified: bool = Field(False, description="when CURRENT fails verification at start (or no bundle "
                                    "is served), serve the newest older bundle that verifies; /health says so")
    unpublished_public: bool = Field(False, description="treat pages with published: false as public: any "
                                     "search key may send published_only: false (default: admin key only)")
    webhook: WebhookConfig = Field(default_factory=WebhookConfig)
    answer: AnswerConfig = Field(default_factory=AnswerConfig)

    @property
    def keys_configured(self) -> bool:
        return any((self.search_key, self.admin_key, self.sync_key))

    def proxy_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        """``trusted_proxies`` as networks; raises :class:`ConfigError` for an entry that is no address or network."""
        try:
            return [ipaddress.ip_network(entry.strip(), strict=False) for entry in self.trusted_proxies]
        except ValueError:
            raise ConfigError("trusted_proxies: each entry must be an IP address or CIDR network") from None

    def check(self, host: str | None = None) -> None:
        """Raise :class:`ConfigError` for short or repeated keys, or no key on a non-loopback host."""
        named = {"search key": self.search_key, "admin key": self.admin_key, "sync key": self.sync_key,
                 "webhook secret": self.webhook.secret}
        present = {name: value for name, value in named.items() if value is not None}
        for name, value in present.items():
            if len(value) < MIN_KEY_CHARS:
                raise ConfigError(f"the {name} must be at least {MIN_KEY_CHARS} characters")
        values = list(present.values())
        if len(set(values)) != len(values):
            raise ConfigError("the search key, admin key, sync key and webhook secret must all differ")
        self.proxy_networks()
        if host is not None and not self.keys_configured and not is_loopback(host):
            raise ConfigError("without API keys gitrag serves only on a loopback address")


def is_loopback(host: str) -> bool:
    """True when every address ``host`` resolves to is a loopback address (127.0.0.0/8, ``::1``).

    An IP literal is checked as is; a name is resolved (``getaddrinfo``) and each address checked,
    so ``127.0.0.1.example.org`` is not loopback unless it really resolves to one.  A name that
    does not resolve is not loopback.
    """
    name = host.strip().strip("[]")
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    addresses = {str(info[4][0]).split("%", 1)[0] for info in infos}  # IPv6 scope ids dropped
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def load_config(path: Path | str | None = None, environ: dict[str, str] | None = None) -> ServerConfig:
    """Read the optional TOML file, apply the environment, validate types and return the config.

    Raises :class:`ConfigError` for an unreadable file or invalid values (keys are not echoed).
    """
    env = os.environ if environ is None else environ
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read the config file ({type(exc).__name__})") from exc
    for field, var in (("search_key", "GITRAG_SEARCH_KEY"), ("admin_key", "GITRAG_ADMIN_KEY"),
                       ("sync_key", "GITRAG_SYNC_KEY")):
        if env.get(var):
            data[field] = env[var]
    if env.get("GITRAG_WEBHOOK_SECRET"):
        data.setdefault("webhook", {})["secret"] = env["GITRAG_WEBHOOK_SECRET"]
    if env.get("GITRAG_GENERATOR"):
        data.setdefault("answer", {})["generator"] = env["GITRAG_GENERATOR"]
    if env.get("GITRAG_CORS_ORIGINS"):
        data["cors_origins"] = [o.strip() for o in env["GITRAG_CORS_ORIGINS"].split(",") if o.strip()]
    try:
        return ServerConfig.model_validate(data)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise ConfigError(f"invalid server configuration: {', '.join(fields)}") from None

"""Structured logging for gitrag's long-running processes (``serve``, ``worker``): one JSON object per line.

Each line has ``ts`` (UTC, ISO 8601, ms), ``level``, ``logger``, ``msg`` (the formatted message) and
the record's extra fields, e.g. for a request ``{"event": "request", "method": "POST", "route":
"/search", "status": 200, "duration_ms": 4.2, "bundle_id": "..."}``.  The level comes from
``--log-level`` or ``GITRAG_LOG_LEVEL`` (``debug``, ``info``, ``warning``, ``error``; default
``info``).  It lives in ``artifacts/`` so that the indexer and the query side share one format.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys
from typing import Any, TextIO

from .redact import redact

LEVELS = ("debug", "info", "warning", "error")
LOG_LEVEL_ENV = "GITRAG_LOG_LEVEL"
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """Format a record as one JSON line: ``ts``, ``level``, ``logger``, ``msg``, then its extra fields.

    The whole line passes through :func:`artifacts.redact.redact`: no URL user info nor remembered
    secret (an endpoint URL's ``key:secret@``) reaches a log, whichever code wrote the message.
    """

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        out.update({k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")})
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return redact(json.dumps(out, ensure_ascii=False, default=str))


def resolve_level(level: str | None = None) -> int:
    """Return the :mod:`logging` level for ``level``, else ``$GITRAG_LOG_LEVEL``, else INFO.

    Raises :class:`ValueError` naming the accepted values for anything else.
    """
    name = (level or os.environ.get(LOG_LEVEL_ENV) or "info").strip().lower()
    if name not in LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LEVELS)}")
    return int(getattr(logging, name.upper()))


def configure_logging(level: str | None = None, stream: TextIO | None = None) -> int:
    """Send the ``gitrag`` and ``aiohttp`` loggers to ``stream`` (default stderr) as JSON lines.

    ``aiohttp`` gets at least WARNING (its access log is replaced by gitrag's request lines).
    Returns the level used.  Raises :class:`ValueError` for an unknown level.
    """
    value = resolve_level(level)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    for name, floor in (("gitrag", value), ("aiohttp", max(value, logging.WARNING))):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(floor)
        logger.propagate = False
    return value

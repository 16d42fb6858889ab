"""Issue 27, finding 6 (warm-up part): a bundle is warmed completely before a swap makes it current.

Every route's first request after a swap finds the graph connection open, the graph's name index
built, the BM25 matrix weighed and the question analysis loaded; a historical bundle (``at=``) is
opened for its request only; the probes call no model provider and are not counted as requests.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import aiohttp
import pytest

from artifacts.store import Store
from indexer.build import build_bundle
from query.search.request import SearchOptions
from query.server.holder import BundleHolder
from query.server.warm import make_probe, probe_text
from tests.conftest import RepoBuilder


@pytest.fixture
def two_bundles(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> tuple[Path, str, str]:  # type: ignore[no-untyped-def]
    for i in range(12):
        repo.write(f"wiki/p{i:02d}.md", f"---\nauthor: Ada Nováková\ntags: [t{i % 3}]\n---\n# Strana {i}\n\n"
                                      f"Odsek o téme {i} a spoločný text.\n")
    repo.commit("one")
    first = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder).manifest.bundle_id
    repo.write("wiki/p00.md", "# Strana 0\n\n" + "\n\n".join(f"## Časť {j}\n\nnový odsek {j}" for j in range(5)))
    repo.commit("two")
    second = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder).manifest.bundle_id
    return tmp_path / "store", first, second


def test_a_bundle_is_probed_on_every_route_before_it_is_served(two_bundles, hash_embedder, caplog) -> None:  # type: ignore[no-untyped-def]
    store, first, second = two_bundles
    holder = BundleHolder(Store(store), embedder=hash_embedder)
    holder.probe = make_probe(SearchOptions())
    with caplog.at_level(logging.INFO, logger="gitrag.server"):
        assert holder.load_current()
    served = holder.bundle
    assert served is not None and served.bundle_id == second
    assert holder.last_warm is not None and set(holder.last_warm) == {"search", "graph", "document", "answer", "total"}
    # what the first /graph request would otherwise open and build
    assert "connection" in served.graph_cache and "index" in served.graph_cache
    assert served.derived  # BM25 matrix, filter tables
    assert not [r for r in caplog.records if getattr(r, "event", None) == "warm_probe_failed"]
    assert [r for r in caplog.records if getattr(r, "event", None) == "warmed"]
    assert probe_text(served).startswith("Strana")
    # a historical bundle is opened for its request only: not probed
    with holder.lease(first) as old:
        assert "connection" not in old.graph_cache
    holder.close()


def test_probes_call_no_generator_and_are_not_counted_as_requests(two_bundles, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    store, _, second = two_bundles
    asked: list[str | None] = []

    def generators(name):  # type: ignore[no-untyped-def]
        asked.append(name)
        raise AssertionError("a warm-up called a generator of the app")

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        from query.server.state import HOLDER

        health = await (await http.get(base + "/health")).json()
        assert health["bundle"]["bundle_id"] == second
        assert set(health["warm_s"]) == {"search", "graph", "document", "answer", "total"}
        metrics = await (await http.get(base + "/metrics")).text()
        # the one "warm-up" embedding of the served bundle, none of the probes
        assert "gitrag_query_embedding_seconds_count 1.0" in metrics, metrics
        assert "connection" in app[HOLDER].bundle.graph_cache

    async def main() -> None:
        from query.server.app import create_app
        from query.server.runner import start_server

        app = create_app(store, embedder=hash_embedder, poll_interval=60, generators=generators)
        runner, port = await start_server(app, "127.0.0.1", 0)
        try:
            async with aiohttp.ClientSession() as http:
                await scenario(f"http://127.0.0.1:{port}", http, app)
        finally:
            await runner.cleanup()

    asyncio.run(main())
    assert asked == []

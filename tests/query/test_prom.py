"""GET /metrics over loopback: Prometheus text format, counters that match the requests made."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from artifacts.jobs import JobQueue
from artifacts.manifest import read_manifest
from artifacts.store import Store
from indexer.build import build_bundle
from query.config import ServerConfig
from query.server.state import HOLDER
from tests.conftest import RepoBuilder
from tests.query.test_server import ADMIN_KEY, SEARCH_KEY, with_server
from tests.query.test_server_timetravel import _corrupt


@pytest.fixture
def history(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> dict[str, str]:  # type: ignore[no-untyped-def]
    repo.write("wiki/a.md", "# Alfa\n\nPrvá stránka o horách.\n")
    first = repo.commit("one")
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder, branch="main")
    repo.write("wiki/b.md", "# Beta\n\nDruhá stránka o horách.\n")
    second = repo.commit("two")
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder, branch="main")
    return {"c1": first, "c2": second, "store": str(tmp_path / "store")}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Parse the exposition with prometheus_client's parser: {(sample name, sorted labels): value}."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(parsed: dict, name: str, **labels: str) -> float:
    return parsed.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_counters_match_the_requests_made(history: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        for _ in range(3):
            async with http.post(base + "/search", json={"query": "horách"}) as resp:
                assert resp.status == 200
        async with http.post(base + "/search", json={"query": ""}) as resp:
            assert resp.status == 400
        async with http.post(base + "/search", json={"query": "horách", "at": history["c1"]}) as resp:
            assert resp.status == 200
        async with http.post(base + "/search", json={"query": "stránka", "at": history["c1"][:8]}) as resp:
            assert resp.status == 200
        async with http.get(base + "/no/such/path/123") as resp:
            assert resp.status == 404
        async with http.get(base + "/health") as resp:
            assert resp.status == 200
        async with http.get(base + "/metrics") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain")
            assert resp.headers["X-Content-Type-Options"] == "nosniff"
            parsed = samples(await resp.text())

        total = "gitrag_http_requests_total"
        assert value(parsed, total, route="/search", method="POST", status="200") == 5
        assert value(parsed, total, route="/search", method="POST", status="400") == 1
        assert value(parsed, total, route="unmatched", method="GET", status="404") == 1
        assert value(parsed, total, route="/health", method="GET", status="200") == 1
        # The scrape itself is still in flight while it is rendered: counted in the gauge, not yet in the total.
        assert value(parsed, "gitrag_http_requests_in_flight") == 1
        assert value(parsed, "gitrag_http_request_duration_seconds_count", route="/search", method="POST",
                     status="200") == 5
        assert value(parsed, "gitrag_http_request_duration_seconds_bucket", route="/search", method="POST",
                     status="200", le="+Inf") == 5
        assert value(parsed, "gitrag_http_request_duration_seconds_sum", route="/search", method="POST",
                     status="200") > 0
        # One query embedding per distinct accepted query and bundle (each bundle keeps an LRU of query vectors:
        # the served bundle's three identical searches embed once; historical: 2), none for the rejected one,
        # plus the warm-up embedding of each bundle opened (served + one historical).
        assert value(parsed, "gitrag_query_embedding_seconds_count") == 1 + 2 + 2
        served = Store(history["store"]).current_id()
        digest = app[HOLDER].bundle.manifest.content_digest
        assert value(parsed, "gitrag_bundle_info", commit=history["c2"], bundle_id=served, content_digest=digest,
                     embedder="hash-64") == 1
        assert value(parsed, "gitrag_bundle_ready") == 1
        assert value(parsed, "gitrag_bundle_items", kind="documents") == 2
        assert value(parsed, "gitrag_bundle_swaps_total") == 1  # the first bundle opened at start-up
        assert value(parsed, "gitrag_bundle_reload_failures_total") == 0
        assert value(parsed, "gitrag_cache_lookups_total", cache="history", result="miss") == 1
        assert value(parsed, "gitrag_cache_lookups_total", cache="history", result="hit") == 1
        assert value(parsed, "gitrag_history_cache_bundles") == 1
        assert any(name == "gitrag_bundle_build_stage_seconds" for name, _ in parsed)
        assert value(parsed, "gitrag_jobs", status="queued") == 0

        # A second scrape sees the first one counted.
        async with http.get(base + "/metrics") as resp:
            again = samples(await resp.text())
        assert value(again, total, route="/metrics", method="GET", status="200") == 1

    with_server(Path(history["store"]), hash_embedder, scenario)


def test_metrics_count_jobs_and_failed_reloads(history: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    store = Path(history["store"])
    queue = JobQueue(store)
    for n in range(3):
        queue.enqueue(kind="push", repo=f"/r{n}", branch="main", commit=f"{n:040d}")
    claimed = queue.claim()
    assert claimed is not None
    queue.fail(claimed.id, "BuildError: broken", retry=False)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        holder = app[HOLDER]
        # Point CURRENT at the other (older) bundle after corrupting it: the reload must fail.
        other = next(b.bundle_id for b in holder.index.list() if b.bundle_id != holder.bundle.bundle_id)
        _corrupt(Store(store).bundle_path(other))
        Store(store).set_current(other)
        async with http.post(base + "/admin/reload") as resp:
            assert resp.status == 200
        async with http.get(base + "/metrics") as resp:
            parsed = samples(await resp.text())
        assert value(parsed, "gitrag_bundle_reload_failures_total") == 1
        assert value(parsed, "gitrag_bundle_swaps_total") == 1
        assert value(parsed, "gitrag_jobs", status="queued") == 2
        assert value(parsed, "gitrag_jobs", status="failed") == 1

    with_server(store, hash_embedder, scenario)


def test_metrics_need_the_admin_key_when_keys_are_set(history: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    config = ServerConfig(search_key=SEARCH_KEY, admin_key=ADMIN_KEY)

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/metrics") as resp:
            assert resp.status == 401 and (await resp.json())["reason"] == "unauthorized"
        async with http.get(base + "/metrics", headers={"X-API-Key": SEARCH_KEY}) as resp:
            assert resp.status == 403 and (await resp.json())["reason"] == "forbidden"
        async with http.get(base + "/metrics", headers={"X-API-Key": ADMIN_KEY}) as resp:
            text = await resp.text()
            assert resp.status == 200
        parsed = samples(text)
        assert value(parsed, "gitrag_http_requests_total", route="/metrics", method="GET", status="401") == 1
        assert value(parsed, "gitrag_http_requests_total", route="/metrics", method="GET", status="403") == 1
        assert ADMIN_KEY not in text and SEARCH_KEY not in text

    with_server(Path(history["store"]), hash_embedder, scenario, config=config)


def test_two_apps_have_separate_registries(history: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    from query.server.app import create_app
    from query.server.prom import METRICS

    one = create_app(history["store"], embedder=hash_embedder)
    two = create_app(history["store"], embedder=hash_embedder)
    one[METRICS].requests.labels("/x", "GET", "200").inc()
    assert 'route="/x"' in one[METRICS].exposition().decode()
    assert 'route="/x"' not in two[METRICS].exposition().decode()


def test_another_cache_is_reported_by_name(history: dict[str, str], hash_embedder) -> None:  # type: ignore[no-untyped-def]
    from types import SimpleNamespace

    from query.server.app import create_app
    from query.server.prom import METRICS

    app = create_app(history["store"], embedder=hash_embedder)
    answers = SimpleNamespace(hits=3, misses=4)
    app[METRICS].watch_cache("answer", answers)
    answers.hits += 1  # read at scrape time
    parsed = samples(app[METRICS].exposition().decode())
    assert value(parsed, "gitrag_cache_lookups_total", cache="answer", result="hit") == 4
    assert value(parsed, "gitrag_cache_lookups_total", cache="answer", result="miss") == 4
    assert value(parsed, "gitrag_cache_lookups_total", cache="history", result="miss") == 0


def test_worker_build_stages_reach_the_server_metrics(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    """`gitrag worker` writes its last build to <store>/worker.prom; /metrics re-exposes it."""
    from artifacts.jobs import WORKER_METRICS
    from indexer.worker import run_worker
    from tests.test_worker import _bare

    repo.write("a.md", "# A\n\nPrvá verzia.\n")
    commit = repo.commit("one")
    bare = _bare(repo, tmp_path)
    store = tmp_path / "store"
    queue = JobQueue(store)
    queue.enqueue(kind="push", repo=str(bare), branch="main", commit=commit)
    assert run_worker(store, embedder=hash_embedder, idle_exit=0.0, poll=0.01) == 1
    written = samples((store / WORKER_METRICS).read_text(encoding="utf-8"))
    stages = {dict(labels)["stage"] for name, labels in written if name == "gitrag_worker_build_stage_seconds"}
    manifest = read_manifest(Store(store).bundle_path(Store(store).current_id()))
    # The manifest holds every stage but publishing, which happens after it is written.
    assert stages == set(manifest.stats.timings) | {"publish"} and {"parse", "embed", "graph"} <= stages
    assert value(written, "gitrag_worker_last_job_seconds") > 0
    assert value(written, "gitrag_worker_last_job_finished", outcome="done") > 1e9

    async def scenario(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/metrics") as resp:
            parsed = samples(await resp.text())
        assert {k: v for k, v in parsed.items() if k[0].startswith("gitrag_worker_")} == written
        assert value(parsed, "gitrag_jobs", status="succeeded") == 1

    with_server(store, hash_embedder, scenario)
    (store / WORKER_METRICS).write_text("garbage {{{\n", encoding="utf-8")

    async def damaged(base, http, app) -> None:  # type: ignore[no-untyped-def]
        async with http.get(base + "/metrics") as resp:
            assert resp.status == 200 and "gitrag_worker_" not in await resp.text()

    with_server(store, hash_embedder, damaged)

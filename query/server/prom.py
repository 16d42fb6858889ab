"""Prometheus metrics of the query server (``GET /metrics``), one :class:`CollectorRegistry` per app.

Not to be confused with :mod:`query.search.metrics` (ranking metrics of ``gitrag eval``).

Every app has its own registry (:class:`ServerMetrics`), so several servers in one process (tests)
never share counters.  Two kinds of metrics:

* counted as events happen (middleware and hooks): ``gitrag_http_requests_total``,
  ``gitrag_http_request_duration_seconds``, ``gitrag_http_requests_in_flight``,
  ``gitrag_query_embedding_seconds``;
* read at scrape time from the server's state (:class:`_StateCollector`): bundle swaps and
  failed reloads, the served bundle as an info metric, its build's seconds per stage (from the
  manifest), cache hits and misses (:meth:`ServerMetrics.watch_cache`), the store's job queue
  by status, and the worker's last build (``<store>/worker.prom``, written by ``gitrag worker``).

With ``gitrag serve --workers N`` (:mod:`query.server.workers`) the workers share one Prometheus
multiprocess directory (``PROMETHEUS_MULTIPROC_DIR``, set by the supervisor before any worker
imports ``prometheus_client``) and any worker answers a scrape: the counted metrics are then
summed over all workers (``in_flight`` as a live sum), while the state metrics read from a
worker's own holder and caches (``gitrag_bundle_*``, ``gitrag_history_cache_*``,
``gitrag_cache_lookups_total``) are that worker's, with a ``worker`` label (a scrape shows the
worker that answered it).  The job queue and the build worker's metrics are the store's, unlabelled.

The ``route`` label is the route's path pattern (``/sync/jobs/{job_id}``), ``unmatched`` for a
path no route serves, so that label values stay few whatever clients send.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from aiohttp import web
from aiohttp.typedefs import Handler
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from artifacts.jobs import JOBS_DB, STATUSES, WORKER_METRICS, JobQueue

if TYPE_CHECKING:
    from query.server.holder import BundleHolder

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
EMBED_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)


class ServerMetrics:
    """The metrics of one server app and the registry that holds them.

    :param holder: the app's :class:`~query.server.holder.BundleHolder`, read at scrape time.
    :param store_root: the store directory (its ``jobs.sqlite`` is read at scrape time if it exists).
    :param worker: this process's index among the workers of ``--workers N``; ``None`` for a single server.
    """

    def __init__(self, holder: BundleHolder, store_root: Any, worker: int | None = None) -> None:
        self.multiprocess_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR") if worker is not None else None
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("gitrag_http_requests", "HTTP requests answered, by route, method and status",
                                ("route", "method", "status"), registry=self.registry)
        self.latency = Histogram("gitrag_http_request_duration_seconds",
                                 "Time to answer an HTTP request (seconds), by route, method and status",
                                 ("route", "method", "status"), buckets=LATENCY_BUCKETS, registry=self.registry)
        self.in_flight = Gauge("gitrag_http_requests_in_flight", "HTTP requests being answered now",
                               registry=self.registry, multiprocess_mode="livesum")
        self.embedding = Histogram("gitrag_query_embedding_seconds", "Time to embed one query (seconds)",
                                   buckets=EMBED_BUCKETS, registry=self.registry)
        self.state = _StateCollector(holder, store_root, worker)
        if self.multiprocess_dir is None:
            self.registry.register(self.state)
        self.watch_cache("history", holder.cache)

    def watch_cache(self, name: str, cache: Any) -> None:
        """Report ``cache.hits`` and ``cache.misses`` (ints) as ``gitrag_cache_lookups_total{cache=name}``.

        The history-bundle LRU is watched as ``history``; the answer cache, where the server has
        one, is added the same way (``metrics.watch_cache("answer", answer_cache)``).
        """
        self.state.caches[name] = cache

    def exposition(self) -> bytes:
        """Return the registry in the Prometheus text format (``CONTENT_TYPE_LATEST``).

        In multiprocess mode: the counted metrics of every worker (read from the shared directory)
        plus this worker's state metrics.
        """
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        registry.register(self.state)
        return generate_latest(registry)

    def time_embedder(self, embedder: Any) -> Any:
        """Return ``embedder`` with ``embed_query`` timed into ``gitrag_query_embedding_seconds``."""
        if embedder is None or isinstance(embedder, TimedEmbedder):
            return embedder
        return TimedEmbedder(embedder, self.embedding.observe)


class TimedEmbedder:
    """An :class:`~artifacts.embedding.Embedder` proxy that reports the seconds of each ``embed_query``."""

    def __init__(self, inner: Any, observe: Callable[[float], None]) -> None:
        self._inner = inner
        self._observe = observe
        self.spec = inner.spec

    def embed_query(self, text: str) -> np.ndarray:
        started = time.perf_counter()
        try:
            return self._inner.embed_query(text)  # type: ignore[no-any-return]
        finally:
            self._observe(time.perf_counter() - started)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._inner.embed_passages(texts)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _StateCollector(Collector):
    """Metrics read from the holder, the served manifest and the job queue at each scrape."""

    def __init__(self, holder: BundleHolder, store_root: Any, worker: int | None = None) -> None:
        self.holder = holder
        self.store_root = store_root
        self.worker = worker
        self.caches: dict[str, Any] = {}

    def describe(self) -> list[Metric]:
        return []  # values (and label sets) exist only at scrape time

    def collect(self) -> Iterator[Metric]:
        for family in self._process_state():
            if self.worker is not None:  # one of several workers: say whose state this is
                family.samples = [s._replace(labels={**s.labels, "worker": str(self.worker)}) for s in family.samples]
            yield family
        yield from _worker_metrics(self.store_root)
        jobs = GaugeMetricFamily("gitrag_jobs", "Build jobs in the store's queue, by status "
                                 "(queue depth: status=\"queued\"; outcomes: succeeded, failed)", labels=["status"])
        for status, count in _job_counts(self.store_root).items():
            jobs.add_metric([status], count)
        yield jobs

    def _process_state(self) -> Iterator[Metric]:
        """The families read from this process's holder and caches."""
        holder = self.holder
        yield CounterMetricFamily("gitrag_bundle_swaps", "Bundles swapped in since start (hot swaps)",
                                  value=holder.swaps)
        yield CounterMetricFamily("gitrag_bundle_reload_failures",
                                  "Bundles that failed to open or verify on reload (the old one kept serving)",
                                  value=getattr(holder, "reload_failures", 0))
        bundle = holder.bundle
        yield GaugeMetricFamily("gitrag_bundle_ready", "1 when a bundle is served, else 0",
                                value=1 if bundle is not None else 0)
        if bundle is not None:
            m = bundle.manifest
            info = InfoMetricFamily("gitrag_bundle", "The served bundle")
            info.add_metric([], {"commit": m.commit, "bundle_id": m.bundle_id, "content_digest": m.content_digest,
                                 "embedder": m.config.embedder.model_id})
            yield info
            counts = GaugeMetricFamily("gitrag_bundle_items", "Items in the served bundle, by kind",
                                       labels=["kind"])
            for kind in ("documents", "chunks", "vectors"):
                counts.add_metric([kind], getattr(m.counts, kind))
            yield counts
            stages = GaugeMetricFamily("gitrag_bundle_build_stage_seconds",
                                       "Seconds per build stage of the served bundle (from its manifest)",
                                       labels=["stage"])
            for stage, seconds in sorted(m.stats.timings.items()):
                stages.add_metric([stage], seconds)
            yield stages
            embeddings = GaugeMetricFamily("gitrag_bundle_build_embeddings",
                                           "Embeddings computed or reused by the served bundle's build",
                                           labels=["source"])
            embeddings.add_metric(["computed"], m.stats.embeddings_computed)
            embeddings.add_metric(["reused"], m.stats.embeddings_reused)
            yield embeddings
        cache = holder.cache
        yield GaugeMetricFamily("gitrag_history_cache_bundles", "Historical bundles open in the LRU",
                                value=len(cache.info()["bundles"]))  # type: ignore[arg-type]
        yield GaugeMetricFamily("gitrag_history_cache_bytes", "Approximate bytes of the open historical bundles",
                                value=cache.total_bytes)
        lookups = CounterMetricFamily("gitrag_cache_lookups", "Cache lookups by cache and result (hit, miss); "
                                      "history: `at` requests for a bundle other than the served one",
                                      labels=["cache", "result"])
        for name, watched in sorted(self.caches.items()):
            lookups.add_metric([name, "hit"], watched.hits)
            lookups.add_metric([name, "miss"], watched.misses)
        yield lookups


def _job_counts(store_root: Any) -> dict[str, int]:
    if not (Path(store_root) / JOBS_DB).exists():  # never create the queue just to read it
        return dict.fromkeys(STATUSES, 0)
    return JobQueue(store_root).counts()


def _worker_metrics(store_root: Any) -> Iterator[Metric]:
    """The families of ``<store>/worker.prom`` (the worker's last build), if the worker wrote one."""
    try:
        text = (Path(store_root) / WORKER_METRICS).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError:  # a damaged file must not break the scrape
        return
    yield from (f for f in families if f.name.startswith("gitrag_worker_"))


METRICS = web.AppKey("metrics", ServerMetrics)


def _route_label(request: web.Request) -> str:
    resource = request.match_info.route.resource
    if resource is None or request.match_info.http_exception is not None:
        return "unmatched"
    return str(resource.canonical)


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Count every request and its latency by route, method and status (outermost middleware)."""
    metrics: ServerMetrics = request.app[METRICS]
    started = time.perf_counter()
    metrics.in_flight.inc()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:  # only if a middleware outside the envelope raised one
        status = exc.status
        raise
    finally:
        metrics.in_flight.dec()
        labels = (_route_label(request), request.method, str(status))
        metrics.requests.labels(*labels).inc()
        metrics.latency.labels(*labels).observe(time.perf_counter() - started)


async def handle_metrics(request: web.Request) -> web.Response:
    """``GET /metrics``: the app's registry in the Prometheus text format."""
    body = request.app[METRICS].exposition()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


__all__ = ["METRICS", "ServerMetrics", "TimedEmbedder", "handle_metrics", "metrics_middleware"]

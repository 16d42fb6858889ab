"""Warming a bundle before it is served: one probe request per route, run before the swap.

Opening a bundle (:func:`query.bundle.open_bundle`) reads the records and the indexes; what the first
request of each route would still pay is the lazy part: the label -> line map of an incremental bundle,
the weighed BM25 matrix and the filter tables (:func:`query.search.weighting.warm_up`), the graph
connection and the graph's name index, the language profiles and word lists the question analysis
loads (once per process), the answerability model, the snippet and sentence tables.  The probes below
go through the same functions as the routes (``/search``, ``/graph``, ``/document``, ``/answer`` with
the extractive generator, so no provider is called), with a text taken from the bundle itself (its
first chunk's title), and their answers are dropped.

A probe that fails is logged and the swap goes on: the routes would answer the same error to the first
request, and whether a bundle is served is decided by opening and verifying it, not by its probes.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from query.answer.pipeline import answer, parse_answer_request
from query.bundle import OpenedBundle
from query.documents import get_document, parse_document_request
from query.graph.dispatch import answer_graph
from query.search.request import SearchOptions, parse_search_request
from query.search.response import search

log = logging.getLogger("gitrag.server")

Probe = Callable[[OpenedBundle], dict[str, float]]
"""Warms a bundle; returns seconds per probe (``search``, ``graph``, ``document``, ``answer``)."""


def probe_text(bundle: OpenedBundle) -> str:
    """A query that the bundle can answer something to: its first chunk's title (or its first path)."""
    if len(bundle.chunks) > 0:
        chunk = bundle.chunks[0]
        text = (chunk.title or chunk.path).strip()
        if any(c.isalnum() for c in text):
            return text[:200]
    return "warm-up"


def make_probe(options: SearchOptions) -> Probe:
    """Return the probe of a server with these search ``options``.

    The answer probe uses the extractive generator (no model): warming never calls a model provider.
    The probe may be called from any thread, also one running an event loop, one call at a time.
    """

    def probe(bundle: OpenedBundle) -> dict[str, float]:
        text = probe_text(bundle)
        took: dict[str, float] = {}

        def run(name: str, work: Callable[[], Any]) -> None:
            started = time.perf_counter()
            try:
                work()
            except Exception as exc:  # noqa: BLE001 - a failing probe never blocks the swap (module docstring)
                log.warning("warm-up probe %s failed on bundle %s: %s", name, bundle.bundle_id, type(exc).__name__,
                            extra={"event": "warm_probe_failed", "bundle_id": bundle.bundle_id, "probe": name})
            took[name] = round(time.perf_counter() - started, 4)

        run("search", lambda: search(bundle, parse_search_request({"query": text}), options))
        run("graph", lambda: answer_graph(bundle, {"query": text}, base_url=options.base_url))
        if len(bundle.chunks) > 0:
            path = bundle.chunks[0].path
            run("document", lambda: get_document(bundle, parse_document_request({"path": path}), options.base_url))
        from query.answer.generators import make_generator  # as default_generators: loaded on first use

        extractive = make_generator("extractive")
        # no answer cache: the probe's answer is not kept
        run("answer", lambda: _LOOP.run(answer(bundle, parse_answer_request({"query": text}), options, extractive,
                                              cache=None)))
        return took

    return probe


class _ProbeLoop:
    """One event loop on one daemon thread for every answer probe of the process (started on first use).

    ``answer()`` is a coroutine that runs its stages in worker threads.  ``asyncio.run`` in each reload
    would make a new loop with a new thread pool per swap: new threads, new malloc arenas, and a server's
    RSS grew by about 6 MB a swap (60 swaps: +370 MB); this loop and its one worker thread are made once.
    A probe called from a thread that runs an event loop itself (a test's reload) works the same way.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None

    def run(self, work: Coroutine[Any, Any, Any]) -> Any:
        with self.lock:
            if self.loop is None:
                self.loop = asyncio.new_event_loop()
                self.loop.set_default_executor(ThreadPoolExecutor(max_workers=1, thread_name_prefix="gitrag-warm"))
                threading.Thread(target=self.loop.run_forever, name="gitrag-warm-loop", daemon=True).start()
        return asyncio.run_coroutine_threadsafe(work, self.loop).result()


_LOOP = _ProbeLoop()


__all__ = ["Probe", "make_probe", "probe_text"]

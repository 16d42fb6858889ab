"""Issue 27, finding 7: vector queries ask for at most what the index holds, and a k-NN the graph cannot fill
(a narrow filter, a sparse small graph) degrades to an exact scan instead of a 500."""

from __future__ import annotations

import dataclasses
import random

import hnswlib
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.build import build_bundle
from query.bundle import open_bundle
from query.search.request import SearchOptions, parse_search_request
from query.search.response import search
from query.search.vectors import vector_ranking
from tests.conftest import RepoBuilder

_RNG = random.Random(27)
WORDS = ["".join(_RNG.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_RNG.randint(3, 9))) for _ in range(2000)]
WORDS += ["garden"]


def _random_page(rng: random.Random, unpublished: bool) -> str:
    head = "---\npublished: false\n---\n" if unpublished else ""
    paragraphs = [" ".join(rng.choice(WORDS) for _ in range(40)) for _ in range(rng.randint(1, 4))]
    return head + f"# {rng.choice(WORDS)}\n\n" + "\n\n".join(paragraphs) + "\n"


def _sparse_graph(bundle):  # type: ignore[no-untyped-def]
    """The same bundle over a real hnswlib index of its vectors built with M=2: its graph search often
    reaches fewer vectors than asked (what a small or sparse graph does)."""
    n = len(bundle.chunks)
    vectors = np.asarray(bundle.hnsw.get_items(list(range(n))), dtype=np.float32)
    sparse = hnswlib.Index(space="ip", dim=vectors.shape[1])
    sparse.init_index(max_elements=max(n, 1), M=2, ef_construction=2, random_seed=1)
    sparse.add_items(vectors, np.arange(n))
    return dataclasses.replace(bundle, hnsw=sparse)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory, hash_embedder):  # type: ignore[no-untyped-def]
    """Bundles of 1, 5 and 40 pages of random words (every third unpublished), each also over a sparse graph."""
    out = []
    for size in (1, 5, 40):
        root = tmp_path_factory.mktemp(f"b{size}")
        repo = RepoBuilder(root / "repo")
        rng = random.Random(size)
        for i in range(size):
            repo.write(f"d{i % 3}/p{i}.md", _random_page(rng, unpublished=i % 3 == 1))
        repo.commit("pages")
        bundle = open_bundle(build_bundle(repo.path, root / "store", embedder=hash_embedder).bundle_path,
                             embedder=hash_embedder)
        out += [bundle, _sparse_graph(bundle)]
    return out


def test_a_knn_the_graph_cannot_fill_is_an_exact_scan(bundles) -> None:  # type: ignore[no-untyped-def]
    sparse = bundles[-1]  # 40 pages over the M=2 graph
    request = parse_search_request({"query": "garden", "limit": 10, "max_per_document": 100})
    body = search(sparse, request, SearchOptions())
    assert body["results"]
    hits = vector_ranking(sparse, "garden", depth=200, published_only=False)
    n = len(sparse.chunks)
    vectors = np.asarray(sparse.hnsw.get_items(list(range(n))), dtype=np.float32)
    best = int(np.argmax(vectors @ sparse.embedder.embed_query("garden")))
    assert hits[0][0] == sparse.chunks.ids[best]  # the exact nearest first
    assert len({cid for cid, _ in hits}) == len(set(sparse.chunks.ids))  # every chunk: depth exceeds the index


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 5), limit=st.integers(1, 100), per_document=st.integers(1, 100),
       published_only=st.booleans(), prefix=st.sampled_from([None, "d0/", "d1/", "d1/p1", "none/"]),
       query=st.sampled_from(["garden", "garden stone", WORDS[0], WORDS[7] + " " + WORDS[9]]))
def test_no_valid_search_fails(bundles, which: int, limit: int, per_document: int, published_only: bool,  # type: ignore[no-untyped-def]
                               prefix: str | None, query: str) -> None:
    body: dict = {"query": query, "limit": limit, "max_per_document": per_document, "published_only": published_only}
    if prefix is not None:
        body["filter"] = {"path_prefix": prefix}
    reply = search(bundles[which], parse_search_request(body), SearchOptions())
    assert len(reply["results"]) <= limit
    paths = [r["document_path"] for r in reply["results"]]
    assert all(p.startswith(prefix) for p in paths) if prefix else True

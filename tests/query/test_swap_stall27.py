"""Issue 27, finding 6: a swap does not stall the requests that arrive right after it.

An incremental bundle keeps its parent's vector-label order but writes ``chunks.jsonl`` in its own:
the label -> line map is made once (double-checked lock, ids only) and, on a server, before the
bundle is served (``ChunkRecords.prepare`` in ``BundleHolder._open``).
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

from artifacts.records import Chunk
from artifacts.store import Store
from indexer.build import build_bundle
from query.records import ChunkRecords, Lines
from query.server.holder import BundleHolder
from tests.conftest import RepoBuilder


def _shuffled_chunks(tmp_path: Path, n: int) -> tuple[Path, list[str]]:
    chunks = [Chunk(chunk_id=f"dir/page{i // 5}.md#{i % 5}", path=f"dir/page{i // 5}.md", ordinal=i % 5, title="T",
                    heading_path=["A"], text="word " * 60, tokens=60, sha256="0" * 64, published=True)
              for i in range(n)]
    ids = [c.chunk_id for c in chunks]
    random.Random(7).shuffle(chunks)
    path = tmp_path / "chunks.jsonl"
    path.write_text("".join(json.dumps(c.model_dump(mode="json"), sort_keys=True) + "\n" for c in chunks))
    return path, ids


def _first_lookups(records: ChunkRecords, threads: int = 8) -> list[float]:
    took: list[float] = []
    labels = list(range(0, len(records), max(1, len(records) // threads)))[:threads]

    def one(label: int) -> None:
        started = time.perf_counter()
        assert records[label].chunk_id == records.ids[label]
        took.append(time.perf_counter() - started)

    workers = [threading.Thread(target=one, args=(label,)) for label in labels]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(took) == threads
    return took


def test_concurrent_first_lookups_map_the_labels_once(tmp_path: Path) -> None:
    path, ids = _shuffled_chunks(tmp_path, 30_000)
    single = _first_lookups(ChunkRecords(Lines(path), ids), threads=1)[0]
    took = _first_lookups(ChunkRecords(Lines(path), ids))
    # before: every waiting thread mapped the file again, one after another (8 x single)
    assert max(took) < 2.5 * single + 0.2, (single, sorted(took))


def test_prepared_records_answer_first_lookups_at_once(tmp_path: Path) -> None:
    path, ids = _shuffled_chunks(tmp_path, 30_000)
    records = ChunkRecords(Lines(path), ids)
    records.prepare()
    assert max(_first_lookups(records)) < 0.05
    assert [records[i].chunk_id for i in range(len(records))] == ids


def test_the_server_prepares_an_incremental_bundle_before_serving_it(repo: RepoBuilder, tmp_path: Path,
                                                                      hash_embedder) -> None:
    for i in range(30):
        repo.write(f"p{i:02d}.md", f"# Page {i}\n\nparagraph of page {i}\n")
    repo.commit("a")
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    repo.write("p00.md", "# Page 0\n\n" + "\n\n".join(f"## T{j}\n\nnew paragraph {j}" for j in range(6)))
    repo.remove("p05.md")
    repo.write("a_new.md", "# New\n\nnew page\n")
    repo.commit("b")
    child = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    assert child.manifest.built_from is not None
    lines = [json.loads(line)["chunk_id"] for line in (child.bundle_path / "chunks.jsonl").read_text().splitlines()]
    holder = BundleHolder(Store(tmp_path / "store"), embedder=hash_embedder)
    assert holder.load_current()
    try:
        with holder.lease() as bundle:
            assert bundle.chunks.ids != lines  # the shape of the finding: labels in the parent's order
            took = _first_lookups(bundle.chunks)
            assert max(took) < 0.05
            assert [bundle.chunks[i].chunk_id for i in range(len(bundle.chunks))] == bundle.chunks.ids
    finally:
        holder.close()

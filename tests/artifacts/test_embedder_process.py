"""A build's embedding model runs in a child process that is replaced and ended, with the same vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from artifacts.embedding import (
    EmbedderProcess,
    HashEmbedder,
    embed_passages_segmented,
    fix_mmap_threshold,
    load_embedder,
    open_build_embedder,
)
from artifacts.errors import EmbedderError
from artifacts.layout import IDS_FILE, VECTORS_FILE
from indexer.build import RELEASE_AFTER, build_bundle
from tests.conftest import MINILM, RepoBuilder

TEXTS = [f"Odstavec {i} o sieťach, smerovaní a fotosyntéze {'slovo ' * (i % 7)}" for i in range(11)]
HEADERS = [f"Titulok {i}\nA > B" if i % 2 else "" for i in range(11)]


def test_child_process_gives_the_in_process_vectors_across_replacements() -> None:
    assert fix_mmap_threshold()  # glibc here; the child sets it too
    local = HashEmbedder(64)
    proc = EmbedderProcess("hash-64", recycle_after=3)
    try:
        assert proc.spec == local.spec
        want, want_owners = embed_passages_segmented(local, TEXTS, HEADERS)
        got = [embed_passages_segmented(proc, TEXTS[i : i + 2], HEADERS[i : i + 2]) for i in range(0, 11, 2)]
        assert np.array_equal(np.concatenate([v for v, _ in got]), want)
        assert [o + i for (_, owners), i in zip(got, range(0, 11, 2), strict=True) for o in owners] == want_owners
        # 11 inputs in batches of 2, a child ended after every 3 embedded inputs: started again
        # for the 3rd and the 5th batch; the 3rd child ended after the last batch.
        assert proc.restarts == 2 and proc._proc is None
        assert np.array_equal(proc.embed_query("smerovanie"), local.embed_query("smerovanie"))
        assert proc.split_passage("text", "hlava") == ["hlava\n\ntext"]
        assert proc.restarts == 3
        proc.release()
        assert proc.peak_rss_mb > 0  # an ended child was waited for and measured
        assert np.array_equal(proc.embed_passages(TEXTS[:3]), local.embed_passages(TEXTS[:3]))
        assert proc.restarts == 4
    finally:
        proc.release()


def test_a_model_that_cannot_load_is_an_embedder_error_from_the_child() -> None:
    with pytest.raises(EmbedderError, match="dimension"):
        EmbedderProcess("hash-1")
    with pytest.raises(EmbedderError, match="not available locally"):
        EmbedderProcess("no-such-org/no-such-model-xyz")


def test_a_child_that_dies_is_an_embedder_error_and_the_next_call_starts_another() -> None:
    proc = EmbedderProcess("hash-16")
    try:
        assert proc._proc is not None
        proc._proc.kill()
        proc._proc.join()
        with pytest.raises(EmbedderError, match="ended unexpectedly"):
            proc.embed_query("a")
        assert proc._proc is None
        assert np.array_equal(proc.embed_query("a"), HashEmbedder(16).embed_query("a"))
    finally:
        proc.release()


def test_hash_embedders_stay_in_process() -> None:
    assert isinstance(open_build_embedder("hash-32"), HashEmbedder)


def _vectors(bundle: Path) -> tuple[list[str], np.ndarray]:
    return json.loads((bundle / IDS_FILE).read_text(encoding="utf-8")), np.load(bundle / VECTORS_FILE)


def test_build_with_a_child_process_embedder_equals_an_in_process_build(repo: RepoBuilder, tmp_path: Path) -> None:
    for i in range(RELEASE_AFTER // 40 + 2):  # enough chunks that the build ends its child after embedding
        repo.write(f"docs/p{i}.md", "".join(f"# Časť {j}\n\n" + f"Text {i}-{j} o horách a sieťach. " * 20 + "\n\n"
                                             for j in range(40)))
    repo.commit()
    proc = EmbedderProcess("hash-64", recycle_after=100)
    try:
        child = build_bundle(repo.path, tmp_path / "a", embedder=proc)
        assert proc._proc is None  # released after the embed stage: no child left during the text index
        assert proc.restarts >= 2
    finally:
        proc.release()
    local = build_bundle(repo.path, tmp_path / "b", embedder=HashEmbedder(64))
    assert child.manifest.counts.chunks >= RELEASE_AFTER
    assert child.manifest.content_digest == local.manifest.content_digest
    ids_a, vec_a = _vectors(child.bundle_path)
    ids_b, vec_b = _vectors(local.bundle_path)
    assert ids_a == ids_b and np.array_equal(vec_a, vec_b)
    extra = child.manifest.model_extra or {}
    assert extra.get("peak_rss_mb_embedder", 0) > 0


def test_minilm_in_a_child_process_gives_the_in_process_vectors() -> None:
    try:
        local = load_embedder(MINILM)
    except EmbedderError:
        pytest.skip("MiniLM is not installed")
    body = " ".join(f"Študent {i} skúma smerovanie v počítačových sieťach." for i in range(60))
    texts, headers = [body, "Krátky text.", "Recept na halušky."], ["Siete", "", "Varenie > Halušky"]
    want, want_owners = embed_passages_segmented(local, texts, headers)
    proc = EmbedderProcess(MINILM)
    try:
        assert proc.spec == local.spec
        got, owners = embed_passages_segmented(proc, texts, headers)
    finally:
        proc.release()
    assert owners == want_owners and len(owners) > len(texts)  # the long body was segmented
    assert np.array_equal(got, want)


def test_a_cli_build_ends_its_embedding_child_cleanly(repo: RepoBuilder, tmp_path: Path) -> None:
    """A small build (fewer inputs than RELEASE_AFTER, so the child is still running at exit) ends
    its child before multiprocessing would terminate it: no "leaked semaphore" warning after the
    command's output (MiniLM's tqdm lock is a named semaphore in a "spawn" child)."""
    import subprocess
    import sys

    try:
        load_embedder(MINILM)
    except EmbedderError:
        pytest.skip("MiniLM is not installed")
    repo.write("a.md", "# Hory\n\nText o horách a sieťach.\n")
    repo.commit()
    script = ("import sys; from artifacts.cli import main; sys.argv = ['gitrag', 'build', '--repo', sys.argv[1], "
              "'--store', sys.argv[2], '--embedder', sys.argv[3], '--quiet']; main()")
    done = subprocess.run([sys.executable, "-c", script, str(repo.path), str(tmp_path / "store"), MINILM],
                          capture_output=True, text=True, timeout=600, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert "CURRENT" in done.stdout + done.stderr
    assert "leaked semaphore" not in done.stderr
    assert "Traceback" not in done.stderr

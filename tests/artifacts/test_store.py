"""Store: atomic publish, read-only bundles, verification, CURRENT pointer and writer lock."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from artifacts.config import BuildConfig, EmbedderSpec
from artifacts.errors import BundleIntegrityError, BundleNotFoundError, FormatVersionError, StoreLockedError
from artifacts.manifest import Manifest, SourceInfo, read_manifest
from artifacts.store import Store, make_bundle_id, verify_bundle


def _manifest(commit: str = "a" * 40) -> Manifest:
    config = BuildConfig(embedder=EmbedderSpec(model_id="hash-8", dim=8, fingerprint="f" * 64))
    fp = config.fingerprint()
    return Manifest(bundle_id=make_bundle_id(commit, fp), commit=commit, tree="b" * 40, commit_time=1,
                    source=SourceInfo(repo="/r"), config=config, config_fingerprint=fp)


def _stage(store: Store) -> Path:
    staging = store.new_staging()
    (staging / "docs.jsonl").write_text('{"path": "a.md"}\n')
    (staging / "text").mkdir()
    (staging / "text" / "seg").write_bytes(b"\x00\x01binary")
    return staging


def test_publish_hashes_every_file_and_makes_bundle_read_only(tmp_path: Path) -> None:
    store = Store(tmp_path / "store").ensure()
    final = store.publish(_stage(store), _manifest())
    manifest = verify_bundle(final)
    assert {f.path for f in manifest.files} == {"docs.jsonl", "text/seg"}
    assert all(len(f.sha256) == 64 and f.size > 0 for f in manifest.files)
    mode = (final / "docs.jsonl").stat().st_mode
    assert not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert list(store.staging_dir.iterdir()) == []


def test_verify_reports_changed_missing_and_extra_files(tmp_path: Path) -> None:
    store = Store(tmp_path / "store").ensure()
    final = store.publish(_stage(store), _manifest())
    os.chmod(final, 0o755)
    os.chmod(final / "docs.jsonl", 0o644)
    (final / "docs.jsonl").write_text('{"path": "b.md"}\n')
    (final / "extra.txt").write_text("x")
    os.chmod(final / "text", 0o755)
    (final / "text" / "seg").unlink()
    with pytest.raises(BundleIntegrityError) as info:
        verify_bundle(final)
    assert info.value.problems == [
        "docs.jsonl: sha256/size mismatch", "extra.txt: not in manifest", "text/seg: missing",
    ]


def test_current_pointer_moves_only_to_published_bundles(tmp_path: Path) -> None:
    store = Store(tmp_path / "store").ensure()
    assert store.current_id() is None
    with pytest.raises(BundleNotFoundError):
        store.current_path()
    final = store.publish(_stage(store), _manifest())
    store.set_current(final.name)
    assert store.current_path() == final
    with pytest.raises(BundleNotFoundError):
        store.set_current("c" * 40 + ".deadbeef")
    assert store.current_id() == final.name
    with pytest.raises(BundleNotFoundError):
        store.bundle_path("../../etc")


def test_publishing_an_existing_bundle_id_keeps_the_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "store").ensure()
    first = store.publish(_stage(store), _manifest())
    before = read_manifest(first).files
    second_stage = store.new_staging()
    (second_stage / "docs.jsonl").write_text("different\n")
    again = store.publish(second_stage, _manifest())
    assert again == first and read_manifest(first).files == before
    assert not second_stage.exists()


def test_writer_lock_is_exclusive(tmp_path: Path) -> None:
    store = Store(tmp_path / "store")
    with store.writer_lock():
        # flock locks are per open file description, so a second open in this process conflicts too.
        with pytest.raises(StoreLockedError):
            with store.writer_lock():
                pass
    with store.writer_lock():
        pass


def test_clean_staging_removes_leftovers(tmp_path: Path) -> None:
    store = Store(tmp_path / "store").ensure()
    leftover = _stage(store)
    assert store.clean_staging() == [leftover.name]
    assert not leftover.exists()


def test_other_format_version_is_rejected(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    data = _manifest().to_json().replace('"format_version": 1', '"format_version": 999')
    (bundle / "manifest.json").write_text(data)
    with pytest.raises(FormatVersionError):
        read_manifest(bundle)


def test_verify_catches_a_manifest_edited_together_with_its_file_hashes(tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    import json

    from artifacts.hashing import sha256_file
    from indexer.build import build_bundle
    from tests.conftest import RepoBuilder

    repo = RepoBuilder(tmp_path / "repo")
    repo.write("a.md", "# A\n\nzebra text\n")
    repo.write("b.md", "# B\n\nother text\n")
    repo.commit()
    bundle = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder).bundle_path
    os.chmod(bundle, 0o755)
    for name in ("manifest.json", "chunks.jsonl"):
        os.chmod(bundle / name, 0o644)
    chunks = bundle / "chunks.jsonl"
    chunks.write_text(chunks.read_text().replace("zebra", "ZEBRA"))
    manifest = json.loads((bundle / "manifest.json").read_text())
    for entry in manifest["files"]:
        if entry["path"] == "chunks.jsonl":
            entry["sha256"], entry["size"] = sha256_file(chunks), chunks.stat().st_size
    manifest["counts"]["documents"] = 7
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(BundleIntegrityError) as info:
        verify_bundle(bundle)
    problems = " | ".join(info.value.problems)
    assert "1 chunk(s) whose text does not match its sha256, first a.md#0" in problems
    assert "2 documents, manifest counts 7" in problems

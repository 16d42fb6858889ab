"""Bundle format back-compatibility: bundles written by past format versions open, or are refused
with a clear ``format_version`` error (the way zoekt keeps golden shards).

``tests/data/bundles/format-<N>/`` holds one small bundle written by the gitrag release whose
``FORMAT_VERSION`` was N, built from the tiny repository :data:`FILES` (``hash-64`` vectors).  Add a
new directory when ``FORMAT_VERSION`` is bumped (``GITRAG_WRITE_FORMAT_FIXTURE=1`` writes the
current version's fixture if it is missing) and keep the old ones: each must keep opening, or fail
with :class:`~artifacts.errors.FormatVersionError` once support for it is dropped on purpose.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "bundles"

FILES = {
    "notes/siete.md": "---\ntitle: Počítačové siete\ntags: [siete, tcp]\nauthor: Ján Holp\n---\n"
                      "# Počítačové siete\n\nSmerovanie paketov a protokol TCP.\n\n## Vrstvy\n\n"
                      "Fyzická, linková a sieťová vrstva. Pozri [[Protokoly]].\n",
    "notes/Protokoly.md": "---\ntitle: Protokoly\npublished: true\n---\nTCP, UDP a QUIC.\n",
    "de/strasse.md": "# Überblick\n\nDie Größe der Straßenbahn in Zürich.\n",
    "draft.md": "---\ntitle: Koncept\npublished: false\n---\nNezverejnený text o fotosyntéze.\n",
}
"""The tiny repository every fixture bundle is built from (one commit)."""


def write_fixture(target: Path) -> Path:
    """Build the fixture bundle of :data:`FILES` with the running code and copy it to ``target``."""
    import tempfile

    from indexer.build import build_bundle
    from tests.conftest import RepoBuilder

    with tempfile.TemporaryDirectory() as tmp:
        repo = RepoBuilder(Path(tmp) / "repo")
        for path, text in FILES.items():
            repo.write(path, text)
        repo.commit("fixture")
        result = build_bundle(repo.path, Path(tmp) / "store", embedder="hash-64", scratch=True)
        shutil.copytree(result.bundle_path, target / result.bundle_id)
    return target / result.bundle_id


def _fixtures() -> list[Path]:
    return sorted(p for d in DATA.glob("format-*") for p in d.iterdir() if p.is_dir())


def _copy(bundle: Path, tmp_path: Path) -> Path:
    """A writable copy (the committed files stay untouched; the graph engine may want a lock file)."""
    target = tmp_path / bundle.name
    shutil.copytree(bundle, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def test_current_format_has_a_fixture() -> None:
    from artifacts.manifest import FORMAT_VERSION

    target = DATA / f"format-{FORMAT_VERSION}"
    if not target.exists() and os.environ.get("GITRAG_WRITE_FORMAT_FIXTURE") == "1":
        target.mkdir(parents=True)
        write_fixture(target)
    assert target.is_dir() and any(target.iterdir()), f"no fixture bundle for format_version {FORMAT_VERSION}"


@pytest.mark.parametrize("bundle", _fixtures(), ids=lambda p: p.parent.name)
def test_fixture_bundle_verifies_opens_and_answers(bundle: Path, tmp_path: Path) -> None:
    from artifacts.embedding import load_embedder
    from artifacts.manifest import FORMAT_VERSION, read_manifest
    from artifacts.store import verify_bundle
    from query.bundle import open_bundle
    from query.search.request import SearchOptions, parse_search_request
    from query.search.response import search

    copy = _copy(bundle, tmp_path)
    manifest = read_manifest(copy)
    assert manifest.format_version == FORMAT_VERSION == int(bundle.parent.name.split("-")[1])
    verify_bundle(copy)
    assert (manifest.counts.documents, manifest.counts.skipped) == (len(FILES), 0)
    model = load_embedder("hash-64")
    opened = open_bundle(copy, embedder=model)
    try:
        body = search(opened, parse_search_request({"query": "smerovanie paketov"}), SearchOptions())
        assert body["results"][0]["document_path"] == "notes/siete.md"
        body = search(opened, parse_search_request({"query": "Straßenbahn Zürich"}), SearchOptions())
        assert body["results"][0]["document_path"] == "de/strasse.md"
        body = search(opened, parse_search_request({"query": "fotosyntéze"}), SearchOptions())
        assert all(r["document_path"] != "draft.md" for r in body["results"])  # unpublished stays hidden
    finally:
        opened.close()


@pytest.mark.parametrize("bundle", _fixtures(), ids=lambda p: p.parent.name)
def test_old_configuration_reads_with_its_own_versions(bundle: Path) -> None:
    from artifacts.manifest import read_manifest

    config = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))["config"]
    manifest = read_manifest(bundle)
    for key in ("parser_version", "chunking_version"):  # fields added after format 1 was written
        assert manifest.config.model_dump()[key] == config.get(key, 1)


@pytest.mark.parametrize("bundle", _fixtures()[-1:], ids=lambda p: p.parent.name)
def test_unknown_format_version_is_refused_with_a_clear_error(bundle: Path, tmp_path: Path) -> None:
    from artifacts.errors import FormatVersionError
    from artifacts.manifest import FORMAT_VERSION, read_manifest
    from query.bundle import open_bundle

    copy = _copy(bundle, tmp_path)
    raw = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    raw["format_version"] = FORMAT_VERSION + 1
    (copy / "manifest.json").write_text(json.dumps(raw, sort_keys=True), encoding="utf-8")
    with pytest.raises(FormatVersionError, match="format_version"):
        read_manifest(copy)
    with pytest.raises(FormatVersionError, match="format_version"):
        open_bundle(copy)

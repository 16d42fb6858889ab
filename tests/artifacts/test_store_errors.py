"""Clear errors and no leftovers: a full disk during use/pin/build, truncated manifests, corrupted bundles."""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from artifacts.cli import main
from artifacts.errors import (
    BundleIntegrityError,
    BundleNotFoundError,
    InvalidRevisionError,
    StoreWriteError,
    UnknownRevisionError,
)
from artifacts.store import Store, check_revision, pin, resolve_bundle_ref, use_bundle
from indexer.build import build_bundle
from tests.conftest import RepoBuilder

GITRAG = str(Path(sys.executable).with_name("gitrag"))


@pytest.fixture
def two(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """A store with bundles of two commits (CURRENT = the second); keys c1, c2, b1, b2, store."""
    out = {"store": str(tmp_path / "store")}
    for n in (1, 2):
        repo.write(f"p{n}.md", f"# P{n}\n\nText {n}.\n")
        out[f"c{n}"] = repo.commit(f"commit {n}")
        out[f"b{n}"] = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder).bundle_id
    return out


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".tmp"))


def test_disk_full_during_use_and_pin_is_one_line_and_leaves_nothing(two: dict[str, str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """ENOSPC simulated by making os.fsync fail (the real tmpfs case is the next test)."""
    store = Store(two["store"])

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    result = CliRunner().invoke(main, ["use", two["c1"][:8], "--store", two["store"]])
    assert result.exit_code == 1
    assert result.output.strip() == "Error: cannot write CURRENT: no space left on device"
    assert store.current_id() == two["b2"] and _leftovers(store.root) == []
    result = CliRunner().invoke(main, ["pin", "--store", two["store"]])
    assert result.exit_code == 1 and result.output.strip() == "Error: cannot write PINNED: no space left on device"
    assert not store.is_pinned() and _leftovers(store.root) == []
    with pytest.raises(StoreWriteError):
        pin(store)


def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.e2e
@pytest.mark.skipif(not _unshare_works(), reason="needs unshare (user + mount namespaces) to mount a tiny tmpfs")
def test_real_full_tmpfs_use_pin_and_build(two: dict[str, str], repo: RepoBuilder, tmp_path: Path) -> None:
    """A real full disk: the store is copied onto a tmpfs mounted in a private mount namespace, then filled."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    repo.write("p3.md", "# P3\n\nA third page needs space.\n")
    repo.commit("commit 3")
    # Room for the store (4 KiB pages per file) plus 300 KiB: less than a new bundle needs (its graph alone ~700 KiB).
    size_kb = sum(-(-f.stat().st_size // 4096) * 4 for f in Path(two["store"]).rglob("*") if f.is_file()) + 300
    script = f"""
mount -t tmpfs -o size={size_kb}k tmpfs {mnt} || exit 99
cp -a {two["store"]} {mnt}/store
{GITRAG} build --repo {repo.path} --store {mnt}/store --embedder hash-64 2>&1; echo "build-exit=$?"
ls -a {mnt}/store/staging; echo "staging-listed"
dd if=/dev/zero of={mnt}/fill bs=4096 2>/dev/null; sync
{GITRAG} use {two["c1"][:8]} --store {mnt}/store 2>&1; echo "use-exit=$?"
{GITRAG} pin --store {mnt}/store 2>&1; echo "pin-exit=$?"
ls -a {mnt}/store; cat {mnt}/store/CURRENT
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script],
                         capture_output=True, text=True, env=env, timeout=300)
    out = run.stdout
    print(out)
    if "exit 99" in out or run.returncode == 99:
        pytest.skip("tmpfs mount refused")
    build_line = next(line for line in out.splitlines() if "building" in line)
    assert "no space left on device" in build_line and "checkpoint" not in out, out
    assert "build-exit=1" in out
    assert out.split("staging-listed")[0].split("build-exit=1")[1].split() == [".", ".."]  # staging cleaned
    assert "Error: cannot write CURRENT: no space left on device\nuse-exit=1" in out, out
    assert "Error: cannot write PINNED: no space left on device\npin-exit=1" in out, out
    listing = out.split("pin-exit=1")[1].split()
    assert not [name for name in listing if name.endswith(".tmp")] and "PINNED" not in listing, out
    assert listing[-1] == two["b2"]  # CURRENT unchanged


def _truncate_manifest(bundle_dir: Path) -> None:
    manifest = bundle_dir / "manifest.json"
    os.chmod(bundle_dir, stat.S_IRWXU)
    os.chmod(manifest, stat.S_IRUSR | stat.S_IWUSR)
    manifest.write_bytes(manifest.read_bytes()[:100])


def test_truncated_manifest_is_corrupt_not_missing(two: dict[str, str]) -> None:
    store = Store(two["store"])
    _truncate_manifest(store.bundles_dir / two["b1"])
    for ref in (two["b1"], two["c1"], two["c1"][:10]):
        with pytest.raises(BundleIntegrityError) as info:
            resolve_bundle_ref(store, ref)
        assert info.value.problems == ["manifest.json: unreadable"] and "corrupt" in str(info.value)
    runner = CliRunner()
    used = runner.invoke(main, ["use", two["b1"], "--store", two["store"]])
    assert used.exit_code == 1 and "corrupt" in used.output and "manifest.json: unreadable" in used.output
    assert "no bundle" not in used.output and store.current_id() == two["b2"]
    verified = runner.invoke(main, ["verify", two["c1"][:10], "--store", two["store"]])
    assert verified.exit_code == 1 and "manifest.json: unreadable" in verified.output
    listed = runner.invoke(main, ["bundles", "--store", two["store"]])
    assert "unreadable manifest" in listed.output


def test_search_names_the_corrupted_file(two: dict[str, str]) -> None:
    store = Store(two["store"])
    target = store.bundles_dir / two["b2"] / "chunks.jsonl"
    os.chmod(target.parent, stat.S_IRWXU)
    os.chmod(target, stat.S_IRUSR | stat.S_IWUSR)
    with open(target, "a", encoding="utf-8") as handle:
        handle.write("\n")
    result = CliRunner().invoke(main, ["search", "text", "--store", two["store"]])
    assert result.exit_code == 1 and "chunks.jsonl: sha256/size mismatch" in result.output
    assert "bundle_corrupt" in result.output
    _truncate_manifest(store.bundles_dir / two["b2"])
    result = CliRunner().invoke(main, ["search", "text", "--store", two["store"]])
    assert result.exit_code == 1 and "manifest.json: unreadable" in result.output


@pytest.mark.parametrize("rev", ["main", "main~1", "main^", "HEAD~1", "v1.2", "refs/tags/v1", "a1b2c3d",
                                 "release/2024", "main~1^2", "x" * 200])
def test_check_revision_accepts(rev: str) -> None:
    assert check_revision(rev) == rev


@pytest.mark.parametrize("rev", ["main\n", "\nmain", "main ", "main:p.md", "main..dev", "HEAD@{1}", "-rf", "/etc",
                                 "a//b", "a/.b", "x.lock", "dir/", "main~x", "@", "ma\x00in", "", "x" * 201, 5, None])
def test_check_revision_refuses(rev: object) -> None:
    with pytest.raises(InvalidRevisionError):
        check_revision(rev)


def test_use_accepts_the_revision_syntax(two: dict[str, str], repo: RepoBuilder) -> None:
    store = Store(two["store"])
    assert use_bundle(store, "main~1").bundle_id == two["b1"]  # source repository from the manifests
    assert use_bundle(store, "main").bundle_id == two["b2"]
    assert use_bundle(store, "HEAD^", repo.path).bundle_id == two["b1"]
    with pytest.raises(UnknownRevisionError):
        use_bundle(store, "no-such-branch")
    result = CliRunner().invoke(main, ["use", "no-such-branch", "--store", two["store"]])
    assert result.exit_code == 1 and "unknown revision" in result.output


def test_bundles_prints_column_headers(two: dict[str, str]) -> None:
    result = CliRunner().invoke(main, ["bundles", "--store", two["store"]])
    lines = result.output.splitlines()
    assert result.exit_code == 0 and lines[0].split() == ["*P", "COMMIT", "COMMITTED", "(UTC)", "SIZE", "BUNDLE",
                                                          "SUMMARY"]
    assert lines[1].startswith("* ") and two["b2"] in lines[1] and two["b1"] in lines[2]
    assert lines[1].index(two["b2"]) == lines[0].index("BUNDLE")  # the header is aligned with the rows


def test_branch_names_across_a_clone_and_the_hooks_bare_repository(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                     hash_embedder) -> None:
    """The first-hour path: a first build from a working clone, then the hook's bare repository gets a
    push; after a rollback, `use main` must roll forward to the bare repository's tip, not the stale
    clone's (a new user saw it print the old bundle and exit 0)."""
    from tests.conftest import git

    store = tmp_path / "store"
    repo.write("a.md", "# A\n\nFirst.\n")
    c1 = repo.commit("one")
    build_bundle(repo.path, store, embedder=hash_embedder, branch="main")
    bare = tmp_path / "wiki.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo.path), str(bare))
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(bare), str(work))
    (work / "b.md").write_text("# B\n\nSecond.\n", encoding="utf-8")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "two")
    git(work, "push", "-q", "origin", "HEAD:main")
    c2 = git(bare, "rev-parse", "main").strip()
    build_bundle(bare, store, embedder=hash_embedder, branch="main")  # what the hook's worker does
    runner = CliRunner()
    assert runner.invoke(main, ["use", c1[:10], "--store", str(store)]).exit_code == 0  # roll back
    forward = runner.invoke(main, ["use", "main", "--store", str(store)])
    assert forward.exit_code == 0, forward.output
    assert Store(store).current_id().startswith(c2), forward.output  # the branch moved forward: its tip wins
    # histories that diverged (a force push): no commit descends from the other, so the name is ambiguous
    (repo.path / "c.md").write_text("# C\n\nOther.\n", encoding="utf-8")
    repo.commit("diverged")
    build_bundle(repo.path, store, embedder=hash_embedder, branch="main", force_current=True)
    with pytest.raises(BundleNotFoundError, match="ambiguous"):
        resolve_bundle_ref(Store(store), "main")
    assert resolve_bundle_ref(Store(store), "main", bare).manifest.commit == c2  # --repo decides

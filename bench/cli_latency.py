"""``gitrag ask`` and ``gitrag search`` as a user runs them: a new process per command, code trees side by side.

Each repetition runs every command once in every tree, the trees in an order that rotates per
repetition, so that load on a shared machine hits all alike.  A command is ``python -c "from
artifacts.cli import main; main()" ...`` with ``PYTHONPATH`` set to the tree (the installed
``gitrag`` script does the same import).  Per run: wall time, CPU time of the child (user + system,
from ``os.wait4``), and the 1-minute load average before it.  One untimed run per tree and command
comes first, so that bytecode files and the page cache are warm in every tree (``PYTHONDONTWRITEBYTECODE``
is removed from the children's environment unless ``--no-bytecode``: an installed package has its
``.pyc`` files).  The output of a command must be the same in every tree: the bench says so per
command (``same_output``), so a speed-up that changed an answer shows.

    PYTHONPATH=. .venv/bin/python bench/cli_latency.py --store STORE --tree before=/path/to/old/checkout \\
        --tree after=. [--reps 7] [--warm] [--ask "Kto napísal prácu o znalostných grafoch?"] \\
        [--search "diplomová práca o vyhľadávaní v slovenských textoch"] [--only search] [--json-out FILE]

``--warm`` adds a third command: a server's warm-up probes (``query.server.warm.make_probe``) of the
store's CURRENT bundle in a new process, with the seconds of each probe.

Lexicon files (:mod:`artifacts.lexicon`) are read from ``$GITRAG_CACHE_DIR`` or the user's cache;
the JSON names the ones that exist at the start (``lexicon_files``), so a run can say whether they
were there.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_ASK = "Kto napísal prácu o znalostných grafoch?"
DEFAULT_SEARCH = "diplomová práca o vyhľadávaní v slovenských textoch"


WARM = """
import json, sys
from query.bundle import open_bundle
from query.cli.graph import bundle_dir_at
from query.search.request import SearchOptions
from query.server.warm import make_probe
bundle = open_bundle(bundle_dir_at(sys.argv[1], None), verify=False, load_model=True)
print(json.dumps(make_probe(SearchOptions())(bundle)))
"""
"""The ``warm`` command: a server's warm-up probes of a new bundle (query.server.warm) in a new process."""


def run_once(python: str, tree: Path, args: list[str], env: dict[str, str]) -> tuple[float, float, float, str]:
    """Run one gitrag command with ``tree`` first on ``PYTHONPATH``; return (wall s, CPU s, load before, stdout)."""
    child_env = {**env, "PYTHONPATH": str(tree)}
    load = os.getloadavg()[0]
    started = time.perf_counter()
    code = WARM if args[0] == "warm" else "from artifacts.cli import main; main()"
    proc = subprocess.Popen([python, "-c", code, *args[1:]] if args[0] == "warm" else [python, "-c", code, *args],
                            env=child_env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd="/")
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: gitrag {' '.join(args[:1])} exited with {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, load, out.decode("utf-8", "replace")


def lexicon_files() -> list[str]:
    base = os.environ.get("GITRAG_CACHE_DIR")
    xdg = os.environ.get("XDG_CACHE_HOME")
    folder = (Path(base) / "lexicons" if base else
              (Path(xdg) if xdg else Path.home() / ".cache") / "gitrag" / "lexicons")
    return sorted(p.name for p in folder.glob("*.lex")) if folder.is_dir() else []


def _stats(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--tree", action="append", required=True, metavar="NAME=DIR",
                        help="a gitrag checkout to run (repeatable; the first is the reference for same_output)")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--ask", default=DEFAULT_ASK)
    parser.add_argument("--search", default=DEFAULT_SEARCH)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--no-bytecode", action="store_true", help="keep PYTHONDONTWRITEBYTECODE as it is")
    parser.add_argument("--warm", action="store_true",
                        help="also time a server's warm-up probes of the store's CURRENT bundle in a new process "
                             "(opened without verifying; probe seconds in the JSON)")
    parser.add_argument("--only", default="ask,search",
                        help="comma-separated commands to time (ask, search; --warm adds warm)")
    parser.add_argument("--json-out", default=None)
    args = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (t.split("=", 1) for t in args.tree)}
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if not args.no_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    commands = {"ask": ["ask", args.ask, "--store", args.store],
                "search": ["search", args.search, "--store", args.store, "--limit", "5"]}
    commands = {name: argv for name, argv in commands.items() if name in args.only.split(",")}
    if args.warm:
        commands["warm"] = ["warm", args.store]
    result: dict[str, object] = {"store": args.store, "trees": {k: str(v) for k, v in trees.items()},
                                 "commands": commands, "reps": args.reps, "lexicon_files": lexicon_files(),
                                 "load_start": os.getloadavg(), "cpus": len(os.sched_getaffinity(0))}
    outputs: dict[tuple[str, str], str] = {}
    for name, tree in trees.items():  # untimed: .pyc files, page cache, lexicon files of a first use
        for command, argv in commands.items():
            outputs[(name, command)] = run_once(args.python, tree, argv, env)[3]
            if command == "warm":  # what it printed are its probe times, not an answer
                outputs[(name, command)] = ""
    runs: dict[str, dict[str, list[tuple[float, float, float]]]] = {n: {c: [] for c in commands} for n in trees}
    probes: dict[str, list[dict[str, float]]] = {}
    names = list(trees)
    for rep in range(args.reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for command, argv in commands.items():
            for name in order:
                wall, cpu, load, out = run_once(args.python, trees[name], argv, env)
                runs[name][command].append((wall, cpu, load))
                if command == "warm":
                    probes.setdefault(name, []).append(json.loads(out))
                elif out != outputs[(name, command)]:
                    outputs[(name, command)] = "(output changed between runs)"
    result["load_end"] = os.getloadavg()
    table: dict[str, dict[str, object]] = {}
    for name in names:
        table[name] = {}
        for command in commands:
            rows = runs[name][command]
            table[name][command] = {"wall_s": _stats([r[0] for r in rows]), "cpu_s": _stats([r[1] for r in rows]),
                                    "load_1min": _stats([r[2] for r in rows]),
                                    "same_output": None if command == "warm"
                                    else outputs[(name, command)] == outputs[(names[0], command)]}
            if command == "warm":
                table[name][command]["probe_s"] = {  # type: ignore[index]
                    probe: _stats([p[probe] for p in probes[name]]) for probe in probes[name][0]}
    result["results"] = table
    result["outputs"] = {f"{n}/{c}": outputs[(n, c)] for n in names[:1] for c in commands}
    print(f"{'tree':<20} {'command':<7} {'wall median (min-max) s':<26} {'CPU median (min-max) s':<26} "
          f"{'load 1 min':<12} same output")
    for name in names:
        for command in commands:
            row = table[name][command]
            wall, cpu, load = row["wall_s"], row["cpu_s"], row["load_1min"]  # type: ignore[index]
            same = "n/a" if row["same_output"] is None else row["same_output"]
            print(f"{name:<20} {command:<7} {wall['median']:.2f} ({wall['min']:.2f}-{wall['max']:.2f}){'':<12} "
                  f"{cpu['median']:.2f} ({cpu['min']:.2f}-{cpu['max']:.2f}){'':<12} "
                  f"{load['min']:.1f}-{load['max']:.1f}{'':<5} {same}")
            if command == "warm":
                print(f"{'':<29}probes, median s: " + ", ".join(
                    f"{p} {v['median']:.3f}" for p, v in row["probe_s"].items()))  # type: ignore[attr-defined]
    print(f"load average at start {result['load_start']}, at end {result['load_end']}; "
          f"lexicon files: {', '.join(result['lexicon_files']) or 'none'}")  # type: ignore[arg-type]
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

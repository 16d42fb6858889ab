"""The ``post-receive`` hook's Python entry: parse stdin, enqueue builds, wake a worker, return fast.

Git runs ``hooks/post-receive`` in the bare repository after a push and feeds it one line
``<old-sha> <new-sha> <refname>`` per updated ref.  This module only touches the store's SQLite
job queue and spawns a detached ``gitrag worker`` when none runs, so the push returns in well
under a second; it never builds.  It imports only :mod:`artifacts` (the queue) to stay fast.

Usage (the installed script does this)::

    python -m hooks.post_receive --repo BARE.git --store DIR --branch main < ref-lines
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from artifacts.jobs import JobQueue, spawn_worker

ZERO = "0" * 40


def parse_updates(lines: TextIO, branch: str,
                  ignored: list[tuple[str, str | None, str]] | None = None) -> list[tuple[str, str]]:
    """Return ``(old, new)`` for each update of ``refs/heads/<branch>``.

    Every other ref update (another branch, a tag, a deletion of the branch) is appended to
    ``ignored`` (when given) as ``(ref, new commit or None, reason)``.
    """
    wanted = f"refs/heads/{branch}"
    updates = []
    for line in lines:
        parts = line.split()
        if len(parts) != 3:
            continue
        old, new, ref = parts
        if ref == wanted and new != ZERO:
            updates.append((old, new))
        elif ignored is not None:
            if ref == wanted:
                reason = f"branch {branch} was deleted; nothing to index"
            else:
                reason = (f"push to {ref} ignored: this hook indexes branch {branch} "
                          f"(reinstall with `gitrag install-hook --branch ...` to change it)")
            ignored.append((ref, None if new == ZERO else new, reason))
    return updates


def main(argv: list[str] | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Enqueue a build for each push to the branch and make sure a worker runs; return 0.

    A failure is reported on ``stdout`` (shown to the pusher) but never fails the hook: the
    push has already happened and must not look failed.
    """
    parser = argparse.ArgumentParser(prog="post-receive")
    parser.add_argument("--repo", required=True)
    parser.add_argument("--store", required=True)
    parser.add_argument("--branch", default="main")
    parser.add_argument("--worker-arg", action="append", default=[])
    args = parser.parse_args(argv)
    out = stdout or sys.stdout
    try:
        ignored: list[tuple[str, str | None, str]] = []
        updates = parse_updates(stdin or sys.stdin, args.branch, ignored)
        repo = str(Path(args.repo).resolve())
        if ignored:
            queue = JobQueue(args.store)
            for ref, commit, reason in ignored:
                job = queue.record_ignored(repo=repo, ref=ref, commit=commit, reason=reason)
                print(f"gitrag: {reason} (job {job.id})", file=out)
        if not updates:
            out.flush()
            return 0
        queue = JobQueue(args.store)
        for old, new in updates:
            queued = queue.enqueue(kind="push", repo=repo, branch=args.branch, commit=new, old_commit=old)
            state = "merged into" if queued.coalesced else "queued as"
            print(f"gitrag: build of {new[:12]} {state} job {queued.job.id}", file=out)
        spawn_worker(args.store, args.worker_arg)
    except Exception as exc:  # noqa: BLE001 - the hook must never fail the push
        print(f"gitrag: could not queue the build ({type(exc).__name__}); run `gitrag build` by hand", file=out)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

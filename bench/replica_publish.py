"""Benchmark: what `gitrag publish` uploads for a 1-file commit after a large bundle (content addressing).

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/replica_publish.py --corpus ../shared/corpora/obsidian-help.bundle \\
        --work DIR [--embedder hash-64] [--out result.json]

Steps: clone the corpus into ``--work``, build ``HEAD`` from scratch, start moto's S3 server on
127.0.0.1 (``moto_server``, a subprocess), publish; then commit a change to one page, build it
(incrementally from the parent bundle, as the worker does), publish again.  Prints one JSON object:
per publish the files and bytes uploaded and reused, and which bundle files changed bytes between
parent and child (so which parts the layout cannot reuse).  Credentials are dummy values for moto.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_moto(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``moto_server`` on a free loopback port; return the process and its endpoint URL."""
    port = free_port()
    binary = Path(sys.executable).with_name("moto_server")
    handle = open(log, "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen([str(binary), "-H", "127.0.0.1", "-p", str(port)], stdout=handle, stderr=handle)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("moto_server did not start")


def dummy_credentials() -> None:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True, help="Git bundle of the corpus")
    parser.add_argument("--work", required=True, help="scratch directory (created)")
    parser.add_argument("--embedder", default="hash-64")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    from artifacts.remote import RemoteStore, make_client, publish_store
    from artifacts.store import Store
    from indexer.build import build_bundle

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    clone = work / "repo"
    if not clone.exists():
        subprocess.run(["git", "clone", "-q", args.corpus, str(clone)], check=True)
    store = Store(work / "store")
    dummy_credentials()
    moto, endpoint = start_moto(work / "moto.log")
    try:
        make_client(endpoint).create_bucket(Bucket="bench")
        remote = RemoteStore("s3://bench/gitrag", endpoint_url=endpoint)
        started = time.monotonic()
        parent = build_bundle(clone, store.root, embedder=args.embedder)
        build_s = time.monotonic() - started
        started = time.monotonic()
        first = publish_store(store, remote)
        first_s = time.monotonic() - started

        page = sorted(clone.rglob("*.md"))[len(list(clone.rglob("*.md"))) // 2]
        page.write_text(page.read_text(encoding="utf-8") + "\n\nOne more sentence for the benchmark.\n",
                        encoding="utf-8")
        env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@b"}
        subprocess.run(["git", "-C", str(clone), "commit", "-q", "-am", "bench: one page"], check=True, env=env)
        started = time.monotonic()
        child = build_bundle(clone, store.root, embedder=args.embedder)
        child_build_s = time.monotonic() - started
        started = time.monotonic()
        second = publish_store(store, remote)
        second_s = time.monotonic() - started
        before = {f.path: f.sha256 for f in parent.manifest.files}
        changed = sorted(f.path for f in child.manifest.files if before.get(f.path) != f.sha256)
        result = {
            "corpus": Path(args.corpus).name, "documents": child.manifest.counts.documents,
            "bundle_files": len(child.manifest.files), "bundle_bytes": sum(f.size for f in child.manifest.files),
            "built_from": child.manifest.built_from, "scratch_build_s": round(build_s, 1),
            "child_build_s": round(child_build_s, 1),
            "first_publish": {**first.as_dict(), "seconds": round(first_s, 2)},
            "one_file_publish": {**second.as_dict(), "seconds": round(second_s, 2)},
            "files_with_new_bytes": changed,
        }
    finally:
        moto.terminate()
        moto.wait(timeout=10)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

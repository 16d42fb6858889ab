"""In-process search latency: gitrag against SQLite FTS5 and bm25s on the same chunks and queries.

Every engine answers the same queries, interleaved (for each query of each round every engine runs
once, in an order that rotates per query), so that load on a shared machine hits all alike.  Prints
p50/p95/p99 (ms) per engine and the ratios of gitrag to FTS5, then the cost of the two hostile
requests of issue 12 (a 62 KB ``filter.tags`` list; a 1,000-letter word) and of the largest valid
filter.

* ``gitrag``: ``query.search.response.search`` (request validation, BM25 strategies, vector arm with the
  bundle's embedder, fusion, anchor, result records) in a worker process importing this tree;
  ``--compare-tree DIR`` adds a second worker importing another checkout (e.g. the code before a
  change) on the same bundle, and counts queries whose top 10 differ between the two.
* ``fts5``: SQLite FTS5 (``unicode61 remove_diacritics 2``) over title, headings, tags, authors and
  text of each chunk (``bench/reference_bm25.py``), any-term OR, top 10.
* ``bm25s``: the ``bm25s`` package (sparse matrix of precomputed BM25 impacts, numpy scoring) over the
  same text, lowercased word tokens, top 10.  Bench-only dependency (``pip install .[bench]``).

Queries (deterministic for a seed): half are document titles, half 2-5 consecutive words of a chunk;
``--typos N`` misspells one word (a letter replaced) in N of them, and every engine's CPU time
(``time.process_time``, not wall) is given for the normal and the misspelt queries apart, with the
ratios of gitrag's CPU p50/p99 to FTS5's (``cpu_ratios_to_fts5``); ``query_embedding`` is the share of
gitrag's search CPU spent embedding the query, over the searches that embedded theirs (later rounds
find the vector in the bundle's query-vector cache: ``--rounds 1`` embeds every query);
``--long N`` replaces N of them with description-style queries of 7-20 consecutive words of a chunk
(more than ``MAX_PREFIX_QUERY_TERMS`` words: the ``any_term`` stem prefixes of long queries), and
p50/p95/p99 are also given for the queries of more than that many distinct words alone.

``--bm25-equivalence`` instead compares, in this process, the BM25 arm scored by Whoosh's matchers
with the same arm scored on the bundle's BM25 matrix (``bm25/``) for every query: top-10 chunk ids
and scores side by side, the number of queries whose top 10 differ and why (a different order of
chunks with equal scores is a tie; anything else is a difference), and each engine's time for the
arm alone, interleaved.

    .venv/bin/python bench/search_latency.py --bundle STORE/bundles/<id> [--queries 200] [--rounds 5] \\
        [--compare-tree /path/to/old/checkout] [--bm25-equivalence] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if "--worker" not in sys.argv:  # a worker imports gitrag from its PYTHONPATH (this tree or --compare-tree)
    sys.path.insert(0, str(ROOT))

WORD = re.compile(r"\w+", re.UNICODE)


# -- worker: one gitrag tree, one opened bundle, one query per stdin line --------------------------------


def worker(bundle_dir: str) -> None:
    """Answer JSON lines ``{"payload": {...}}`` with ``{"ms", "status", "top"}`` (in-process search time)."""
    from query.bundle import open_bundle
    from query.errors import QueryError

    try:
        from query.search.request import SearchOptions, parse_search_request
        from query.search.response import search
        from query.search.weighting import warm_up
    except ImportError:  # a tree from before the split of query/search/hybrid.py
        from query.search import hybrid  # type: ignore[attr-defined]
        SearchOptions, parse_search_request, search = hybrid.SearchOptions, hybrid.parse_search_request, hybrid.search
        warm_up = getattr(hybrid, "warm_up", None)  # older trees warm inside search

    bundle = open_bundle(Path(bundle_dir))
    options = SearchOptions()
    if warm_up is not None:  # as the server does after opening a bundle
        warm_up(bundle)
    search(bundle, parse_search_request({"query": "warm up"}), options)
    embed_cpu = [0.0]  # CPU seconds of the query embeddings of the current search
    if bundle.embedder is not None:  # time the model's part of a search (a query found in the vector cache: 0)
        embed_query = bundle.embedder.embed_query

        def timed_embed_query(text: str):  # type: ignore[no-untyped-def]
            cpu = time.process_time()
            try:
                return embed_query(text)
            finally:
                embed_cpu[0] += time.process_time() - cpu
        bundle.embedder.embed_query = timed_embed_query
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        payload = json.loads(line)["payload"]
        embed_cpu[0] = 0.0
        started, cpu = time.perf_counter(), time.process_time()
        try:
            body = search(bundle, parse_search_request(payload), options)
            status, top = body["status"], [r["chunk_id"] for r in body["results"]]
        except QueryError as exc:
            status, top = f"rejected:{exc.reason}", []
        took, cpu = (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000
        print(json.dumps({"ms": took, "cpu_ms": cpu, "embed_cpu_ms": embed_cpu[0] * 1000, "status": status,
                          "top": top}), flush=True)


class Worker:
    """A ``--worker`` subprocess importing gitrag from ``tree``."""

    def __init__(self, name: str, tree: Path, bundle: Path) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--bundle", str(bundle)]
        self.proc = subprocess.Popen(command, env=env, cwd=str(tree), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        if not ready:
            raise SystemExit(f"worker {name} failed to start")

    def ask(self, payload: dict) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"payload": payload}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


# -- reference engines ----------------------------------------------------------------------------------


def _chunk_texts(bundle: Path) -> tuple[list, list[str]]:
    from artifacts.layout import CHUNKS_FILE, DOCS_FILE
    from artifacts.records import Chunk, Document, read_records

    docs = {d.path: d for d in read_records(bundle / DOCS_FILE, Document)}
    chunks = list(read_records(bundle / CHUNKS_FILE, Chunk))
    texts = []
    for c in chunks:
        doc = docs[c.path]
        texts.append("\n".join([c.title, " ".join(c.heading_path), " ".join([*doc.tags, *doc.authors]), c.text]))
    return chunks, texts


class Fts5:
    name = "fts5"

    def __init__(self, texts: list[str]) -> None:
        import sqlite3

        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE c USING fts5(body, tokenize='unicode61 remove_diacritics 2')")
        self.db.executemany("INSERT INTO c(rowid, body) VALUES (?, ?)", enumerate(texts))
        self.db.commit()

    def ask(self, query: str) -> dict:
        started, cpu = time.perf_counter(), time.process_time()
        words = list(dict.fromkeys(w.lower() for w in WORD.findall(query)))
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = self.db.execute("SELECT rowid FROM c WHERE c MATCH ? ORDER BY bm25(c) LIMIT 10", (match,)).fetchall() \
            if words else []
        return {"ms": (time.perf_counter() - started) * 1000, "cpu_ms": (time.process_time() - cpu) * 1000,
                "top": [r[0] for r in rows]}


class Bm25s:
    name = "bm25s"

    def __init__(self, texts: list[str]) -> None:
        import bm25s

        self.bm25s = bm25s
        self.model = bm25s.BM25()
        self.model.index(bm25s.tokenize([t.lower() for t in texts], stopwords=None, show_progress=False),
                         show_progress=False)
        self.k = min(10, len(texts))  # bm25s refuses a k above the corpus size

    def ask(self, query: str) -> dict:
        started, cpu = time.perf_counter(), time.process_time()
        tokens = self.bm25s.tokenize([query.lower()], stopwords=None, show_progress=False)
        top: list = []
        if tokens.vocab:
            # n_threads=0: scored inline.  n_threads=1 starts a thread pool per call, whose start-up and
            # hand-off made bm25s look ~80x slower than its CPU time under load (issue 26.7).
            docs, _scores = self.model.retrieve(tokens, k=self.k, show_progress=False, n_threads=0)
            top = [int(d) for d in docs[0]]
        return {"ms": (time.perf_counter() - started) * 1000, "cpu_ms": (time.process_time() - cpu) * 1000,
                "top": top}


# -- queries and statistics -----------------------------------------------------------------------------


def make_queries(chunks: list, n: int, seed: int, long: int = 0) -> list[str]:
    """Return ``n`` queries: ``long`` of 7-20 consecutive words of a chunk (the last ones), the rest half
    distinct document titles, half 2-5 consecutive words of a chunk (the same as with ``long`` 0 and
    ``n - long`` queries)."""
    rng = random.Random(seed)
    short = n - long
    titles = sorted({c.title for c in chunks if WORD.search(c.title)})
    queries = rng.sample(titles, min(len(titles), short // 2))

    def add_until(count: int, least: int, most: int) -> None:
        """Append windows of ``least``-``most`` consecutive words of random chunks until ``count`` queries."""
        if len(queries) < count and not any(len(WORD.findall(c.text)) >= least for c in chunks):
            raise SystemExit(f"search_latency: no chunk has {least} words for a query of {least}-{most} words")
        while len(queries) < count:
            words = WORD.findall(rng.choice(chunks).text)
            if len(words) >= least:
                size = rng.randint(least, min(most, len(words)))
                start = rng.randrange(len(words) - size + 1)
                queries.append(" ".join(words[start:start + size]))

    add_until(short, 2, 5)
    add_until(n, 7, 20)
    return queries


def misspell(queries: list[str], n: int, seed: int) -> set[int]:
    """Misspell one word (5+ letters: one letter replaced) in ``n`` of ``queries`` (in place); return their indexes.

    The queries chosen are the first ``n`` that have such a word, so the normal queries stay as they were.
    """
    rng = random.Random(seed + 1)
    done: set[int] = set()
    for i, query in enumerate(queries):
        if len(done) == n:
            break
        words = [w for w in WORD.findall(query) if len(w) >= 5 and w.isalpha()]
        if not words:
            continue
        word = rng.choice(words)
        at = rng.randrange(1, len(word))
        typo = word[:at] + ("x" if word[at] != "x" else "q") + word[at + 1:]
        queries[i] = query.replace(word, typo, 1)
        done.add(i)
    return done


def is_long(query: str) -> bool:
    """Return whether ``query`` has more than ``MAX_PREFIX_QUERY_TERMS`` distinct words (gitrag's long queries)."""
    from query.search.terms import MAX_PREFIX_QUERY_TERMS, query_terms

    return len(query_terms(query)) > MAX_PREFIX_QUERY_TERMS


def percentiles(values: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(values, n=100, method="inclusive")
    return {"p50_ms": round(qs[49], 2), "p95_ms": round(qs[94], 2), "p99_ms": round(qs[98], 2),
            "max_ms": round(max(values), 2)}


def hostile_payloads() -> dict[str, dict]:
    """The requests of issue 12 that used to cost seconds, and the largest request the model accepts."""
    rng = random.Random(7)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return {
        "filter_tags_62kb": {"query": "obsidian sync", "filter": {"tags": [
            "".join(rng.choice(letters) for _ in range(12)) for _ in range(4000)]}},
        "word_1000_letters": {"query": "".join(rng.choice(letters) for _ in range(1000))},
        "largest_valid_filter": {"query": "obsidian sync settings", "filter": {
            "path_prefix": "e" * 1000,
            "tags": ["".join(rng.choice(letters) for _ in range(200)) for _ in range(64)],
            "categories": ["".join(rng.choice(letters) for _ in range(200)) for _ in range(64)],
            "year": list(range(1990, 2054))}},
        "largest_valid_filter_matching": {"query": "obsidian sync settings", "filter": {
            "tags": ["".join(rng.choice(letters) for _ in range(199)) for _ in range(63)] + ["publish"],
            "year": list(range(1970, 2034))}},
    }


def bm25_equivalence(bundle_dir: Path, queries: list[str], depth: int = 100, top: int = 10) -> dict:
    """Compare the BM25 arm, Whoosh vs matrix, for each query (see the module docstring)."""
    import math

    from query.bundle import open_bundle
    from query.search.bm25 import bm25_ranking
    from query.search.request import SearchOptions
    from query.search.weighting import bm25_matrix

    bundle = open_bundle(bundle_dir, load_model=False)
    if bm25_matrix(bundle) is None:
        raise SystemExit("this bundle has no bm25/ matrix")
    opts = SearchOptions()
    times: dict[str, list[float]] = {"whoosh": [], "matrix": []}
    differ: list[dict] = []
    ties = max_rel = 0.0
    for i, query in enumerate(queries):
        hits = {}
        for engine in (("whoosh", "matrix") if i % 2 == 0 else ("matrix", "whoosh")):
            started = time.perf_counter()
            hits[engine], _ = bm25_ranking(bundle, query, depth, True, options=opts, engine=engine)
            times[engine].append((time.perf_counter() - started) * 1000)
        a, b = hits["whoosh"][:top], hits["matrix"][:top]
        scores_a = dict(hits["whoosh"])
        for cid, score in b:
            if cid in scores_a:
                max_rel = max(max_rel, abs(score - scores_a[cid]) / max(abs(scores_a[cid]), 1e-300))
        if [c for c, _ in a] == [c for c, _ in b]:
            continue
        same_scores = len(a) == len(b) and all(
            math.isclose(x, y, rel_tol=1e-9) for (_, x), (_, y) in zip(a, b, strict=True))
        # A tie: the same sequence of scores, only chunks of equal score in another order (or cut differently).
        if same_scores:
            ties += 1
        differ.append({"query": query, "tie": same_scores, "whoosh": a, "matrix": b})
    bundle.close()
    return {"queries": len(queries), "top": top, "depth": depth,
            "top_differs": len(differ), "of_which_ties": int(ties), "max_relative_score_difference": max_rel,
            "arm_ms": {name: percentiles(values) for name, values in times.items()}, "differences": differ}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", required=True, type=Path)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--long", type=int, default=0,
                        help="how many of the queries are 7-20 consecutive words of a chunk (description-style)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--typos", type=int, default=0,
                        help="misspell one word in this many of the queries; their figures are also given apart")
    parser.add_argument("--compare-tree", type=Path, default=None,
                        help="another gitrag checkout to measure side by side (named gitrag-compare)")
    parser.add_argument("--engines", default="gitrag,fts5,bm25s")
    parser.add_argument("--skip-compare-hostile", default="",
                        help="comma-separated hostile requests not sent to gitrag-compare (e.g. filter_tags_62kb, "
                             "which cost the old code minutes on a large vault)")
    parser.add_argument("--bm25-equivalence", action="store_true",
                        help="compare the BM25 arm scored by Whoosh and by the bundle's BM25 matrix, in-process")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(str(args.bundle))
        return 0

    bundle = args.bundle.resolve()
    wanted = args.engines.split(",")
    chunks, texts = _chunk_texts(bundle)
    if not 0 <= args.long <= args.queries:
        parser.error("--long must be between 0 and --queries")
    queries = make_queries(chunks, args.queries, args.seed, args.long)
    typo_ids = misspell(queries, args.typos, args.seed) if args.typos else set()
    long_ids = {i for i, q in enumerate(queries) if is_long(q)}
    if args.bm25_equivalence:
        report = bm25_equivalence(bundle, queries)
        if args.json:
            print(json.dumps(report, indent=1, ensure_ascii=False))
        else:
            print(f"{bundle.name}: BM25 arm, Whoosh vs matrix, {report['queries']} queries (depth {report['depth']})")
            for name, row in report["arm_ms"].items():
                print(f"  {name:8s} p50 {row['p50_ms']:9.2f}  p95 {row['p95_ms']:9.2f}  p99 {row['p99_ms']:9.2f} ms")
            print(f"  top {report['top']} differs: {report['top_differs']} (ties of equal scores: "
                  f"{report['of_which_ties']}); largest relative score difference "
                  f"{report['max_relative_score_difference']:.2e}")
            for d in report["differences"]:
                print(f"  {'tie' if d['tie'] else 'DIFF'}: {d['query']!r}")
                for (ca, sa), (cb, sb) in zip(d["whoosh"], d["matrix"], strict=False):
                    print(f"      {sa:.9f} {ca:50.50s} | {sb:.9f} {cb:50.50s}")
        return 0
    engines: list = []
    if "gitrag" in wanted:
        engines.append(Worker("gitrag", ROOT, bundle))
        if args.compare_tree is not None:
            engines.append(Worker("gitrag-compare", args.compare_tree.resolve(), bundle))
    if "fts5" in wanted:
        engines.append(Fts5(texts))
    if "bm25s" in wanted:
        engines.append(Bm25s(texts))

    times: dict[str, list[float]] = {e.name: [] for e in engines}
    long_times: dict[str, list[float]] = {e.name: [] for e in engines}
    cpu: dict[str, dict[str, list[float]]] = {kind: {e.name: [] for e in engines} for kind in ("normal", "typo")}
    tops: dict[str, list] = {e.name: [None] * len(queries) for e in engines}
    embedded: dict[str, list[tuple[float, float]]] = {e.name: [] for e in engines if isinstance(e, Worker)}
    for _round in range(args.rounds):
        for i, query in enumerate(queries):
            k = i % len(engines)
            for engine in engines[k:] + engines[:k]:
                answer = engine.ask({"query": query}) if isinstance(engine, Worker) else engine.ask(query)
                times[engine.name].append(answer["ms"])
                cpu["typo" if i in typo_ids else "normal"][engine.name].append(answer["cpu_ms"])
                if i in long_ids:
                    long_times[engine.name].append(answer["ms"])
                tops[engine.name][i] = answer["top"]
                if answer.get("embed_cpu_ms"):  # the query was embedded (not found in the query-vector cache)
                    embedded[engine.name].append((answer["embed_cpu_ms"], answer["cpu_ms"]))

    rows = {name: percentiles(values) for name, values in times.items()}
    result: dict = {"bundle": bundle.name, "chunks": len(chunks), "queries": len(queries), "rounds": args.rounds,
                    "long_queries": len(long_ids), "engines": rows}
    result["cpu"] = {kind: {name: percentiles(values) for name, values in by.items() if len(values) >= 2}
                     for kind, by in cpu.items()}
    result["typo_queries"] = len(typo_ids)
    if "fts5" in result["cpu"]["normal"]:  # CPU time, not wall: the figures load does not distort
        result["cpu_ratios_to_fts5"] = {
            kind: {name: {k: round(v[k] / max(by["fts5"][k], 1e-9), 2) for k in ("p50_ms", "p99_ms")}
                   for name, v in by.items() if name != "fts5"}
            for kind, by in result["cpu"].items() if "fts5" in by}
    # The query embedding's share of a search's CPU, over the searches that embedded their query (with
    # --rounds > 1 the later rounds find the vectors in the bundle's query-vector cache).
    result["query_embedding"] = {
        name: {"searches": len(pairs), "share_of_cpu": round(sum(e for e, _ in pairs) / sum(c for _, c in pairs), 3),
               "embed_cpu_p50_ms": round(statistics.median(e for e, _ in pairs), 2),
               "search_cpu_p50_ms": round(statistics.median(c for _, c in pairs), 2),
               "share_p50": round(statistics.median(e / c for e, c in pairs if c > 0), 3)}
        for name, pairs in embedded.items() if len(pairs) >= 2}
    if len(long_ids) >= 2:
        result["engines_long_queries"] = {name: percentiles(values) for name, values in long_times.items()}
    if "fts5" in rows:
        result["ratios_to_fts5"] = {name: {k: round(v[k] / rows["fts5"][k], 1) for k in ("p50_ms", "p99_ms")}
                                    for name, v in rows.items() if name != "fts5"}
    if "gitrag" in tops and "gitrag-compare" in tops:
        result["top10_differs"] = sum(a != b for a, b in zip(tops["gitrag"], tops["gitrag-compare"], strict=True))
    hostile: dict = {}
    for engine in (e for e in engines if isinstance(e, Worker)):
        for name, payload in hostile_payloads().items():
            if engine.name == "gitrag-compare" and name in args.skip_compare_hostile.split(","):
                continue
            answers = [engine.ask(payload) for _ in range(3)]
            hostile[f"{engine.name}:{name}"] = {"ms": round(statistics.median(a["ms"] for a in answers), 1),
                                                "status": answers[0]["status"], "results": len(answers[0]["top"])}
    result["hostile_requests"] = hostile
    for engine in engines:
        if isinstance(engine, Worker):
            engine.close()
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"{result['bundle']}: {len(chunks)} chunks, {len(queries)} queries x {args.rounds} rounds, interleaved; "
              f"{len(long_ids)} queries of more than 6 distinct words")
        for name, row in rows.items():
            ratio = result.get("ratios_to_fts5", {}).get(name)
            print(f"  {name:15s} p50 {row['p50_ms']:9.2f}  p95 {row['p95_ms']:9.2f}  p99 {row['p99_ms']:9.2f} ms"
                  + (f"   x FTS5: p50 {ratio['p50_ms']}  p99 {ratio['p99_ms']}" if ratio else ""))
        for name, row in result.get("engines_long_queries", {}).items():
            print(f"  {name:15s} p50 {row['p50_ms']:9.2f}  p95 {row['p95_ms']:9.2f}  p99 {row['p99_ms']:9.2f} ms"
                  f"   (the {len(long_ids)} long queries only)")
        for kind, by in result["cpu"].items():
            for name, row in by.items():
                print(f"  {name:15s} CPU p50 {row['p50_ms']:7.2f}  p95 {row['p95_ms']:7.2f}  "
                      f"p99 {row['p99_ms']:7.2f} ms   ({kind} queries)")
        for kind, by in result.get("cpu_ratios_to_fts5", {}).items():
            for name, ratio in by.items():
                print(f"  {name:15s} CPU x FTS5: p50 {ratio['p50_ms']}  p99 {ratio['p99_ms']}   ({kind} queries)")
        for name, row in result["query_embedding"].items():
            print(f"  {name:15s} query embedding: {row['share_of_cpu']:.1%} of the CPU of {row['searches']} searches "
                  f"that embedded (p50 {row['embed_cpu_p50_ms']} of {row['search_cpu_p50_ms']} ms)")
        if "top10_differs" in result:
            print(f"  queries whose gitrag top 10 differs from gitrag-compare: {result['top10_differs']}")
        for name, row in hostile.items():
            print(f"  {name:45s} {row['ms']:10.1f} ms  {row['status']}  {row['results']} results")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Choose the fusion settings of one embedder from arm dumps of several question sets (dev splits only).

Reads the per-question arm rankings that ``bench/fusion_sweep.py --dump`` writes (one file per
bundle and question set, all built with the same embedder), scores a grid of fusion settings
(``rrf_k``, ``vector_weight``, chunk or document level, the dense-arm confidence off or with several
thresholds and floors, the lexical anchor always on BM25's first document) on the **dev** questions,
and chooses by one rule:

1. keep only settings with hybrid nDCG@10 >= BM25 - ``--max-loss`` (0.005) on every dev set (a
   model that cannot read a language must not drag hybrid below BM25);
2. among them, the largest worst-case margin of hybrid over the better arm (max of BM25 and dense)
   across the dev sets, then the largest mean nDCG@10;
3. the ``--keep`` settings (default: the built-in ones, the ``default`` fusion profile) stay when
   their worst-case margin is within ``--tie`` (0.002) of the best: a change must earn its place.

Questions without a ``split`` (obsidian-desc) count as dev; ``--heldout-set NAME`` keeps a whole set
out of the choice.  Prints, side by side, BM25, dense, RRF(FTS5, dense) (when ``--fts5`` dumps of
``bench/reference_bm25.py --dump`` are given), the ``--keep`` settings and the chosen ones, per set
for dev and held-out questions in separate columns, and the chosen settings as a profile
(``artifacts/fusion_profiles.json`` shape).

    .venv/bin/python bench/fusion_calibrate.py --embedder e5 \\
        --dump xquad-de=DUMPS/xquad-e5.jsonl --dump desc-cs=DUMPS/desc-cs-e5.jsonl ... \\
        [--fts5 xquad-de=DUMPS/xquad-fts5.jsonl ...] [--json OUT]

No model, no bundle: seconds per thousand questions and setting.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from artifacts.fusion import FUSION_FIELDS, load_profiles  # noqa: E402
from query.search.anchor import apply_anchor  # noqa: E402
from query.search.fusion import fuse_rankings, top_documents  # noqa: E402
from query.search.metrics import mean_scores, score_question  # noqa: E402
from query.search.request import SearchOptions  # noqa: E402

DOC_DEPTH = 10


class _Docs:
    """What :func:`fuse_rankings` reads of a bundle when ``n_docs`` is given: nothing (``docs`` for the default)."""

    def __init__(self, n: int) -> None:
        self.docs = range(n)


def grid() -> dict[str, dict[str, Any]]:
    """Return the settings scored: name -> fusion fields (the rest as the ``default`` profile)."""
    confidence: dict[str, dict[str, Any]] = {
        "conf off": {"vector_confidence": False},
        "conf 3-5 floor .5": {"vector_confidence": True, "confidence_z_none": 3.0, "confidence_z_full": 5.0,
                              "confidence_top_floor": 0.5, "confidence_top_depth": 10},
        "conf 3-5 floor 1": {"vector_confidence": True, "confidence_z_none": 3.0, "confidence_z_full": 5.0,
                             "confidence_top_floor": 1.0, "confidence_top_depth": 10},
        "conf 1-2.5 floor .5": {"vector_confidence": True, "confidence_z_none": 1.0, "confidence_z_full": 2.5,
                                "confidence_top_floor": 0.5, "confidence_top_depth": 10},
        "conf 0-2 floor 1": {"vector_confidence": True, "confidence_z_none": 0.0, "confidence_z_full": 2.0,
                             "confidence_top_floor": 1.0, "confidence_top_depth": 10},
    }
    out: dict[str, dict[str, Any]] = {}
    # The lexical anchor stays on (BM25's first document): it is a guarantee of the design (a rare exact
    # term found in one document ranks first, e.g. an error code), which no question set here tests.
    for level, k, wv, (cname, conf) in itertools.product(
            ("chunk", "document"), (5, 10, 20, 60), (0.25, 0.5, 0.75, 1.0, 1.5), confidence.items()):
        name = f"{level} k={k} wv={wv} {cname}"
        out[name] = {"fusion_level": level, "rrf_k": k, "vector_weight": wv, "anchor": True,
                     "anchor_bm25_rank": 1, **conf}
    return out


def load_dump(path: Path) -> list[dict[str, Any]]:
    """Read one ``fusion_sweep.py --dump`` file (JSON lines; each row needs ``reach``: documents it can reach)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for row in rows:
        if "reach" not in row:
            sys.exit(f"{path}: rows have no 'reach' (re-dump with the current bench/fusion_sweep.py)")
        row["bm25"] = [(cid, float(sc)) for cid, _, sc in row["bm25"]]
        row["vector"] = [(cid, float(sc)) for cid, _, sc in row["vector"]]
        row["bm25_docs"] = top_documents(None, (c for c, _ in row["bm25"]), DOC_DEPTH)  # type: ignore[arg-type]
    return rows


def hybrid_docs(row: dict[str, Any], opts: SearchOptions) -> list[str]:
    """The document ranking the server gives one dumped question under ``opts`` (anchor as ``rank_chunks``)."""
    order, scores, info = fuse_rankings(_Docs(row["reach"]), row["bm25"], row["vector"], opts,  # type: ignore[arg-type]
                                        row["reach"])
    anchor = row["anchor"] if opts.anchor else None
    if anchor is not None and anchor in row["bm25_docs"][:opts.anchor_bm25_rank]:
        apply_anchor(None, anchor, row["bm25"], order, scores, info)  # type: ignore[arg-type]
    return top_documents(None, order, DOC_DEPTH)  # type: ignore[arg-type]


def rrf_docs(a: list[str], b: list[str], k: int = 60) -> list[str]:
    """Plain RRF of two document rankings (equal weights): the off-the-shelf anchor."""
    score: dict[str, float] = {}
    for ranking in (a, b):
        for rank, doc in enumerate(ranking, start=1):
            score[doc] = score.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda d: (-score[d], d))[:DOC_DEPTH]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", required=True, help="label of the embedder the dumps were made with")
    parser.add_argument("--dump", action="append", required=True, metavar="SET=PATH")
    parser.add_argument("--fts5", action="append", default=[], metavar="SET=PATH",
                        help="bench/reference_bm25.py --dump of the same set (document rankings)")
    parser.add_argument("--heldout-set", action="append", default=[], metavar="SET",
                        help="a set scored but never used to choose (all its questions are held out)")
    parser.add_argument("--max-loss", type=float, default=0.005)
    parser.add_argument("--tie", type=float, default=0.002)
    parser.add_argument("--keep", default="default", help="profile of artifacts/fusion_profiles.json kept on a tie")
    parser.add_argument("--json", type=Path, default=None, help="also write every setting's figures here")
    args = parser.parse_args()

    sets: dict[str, list[dict[str, Any]]] = {}
    for spec in args.dump:
        name, _, path = spec.partition("=")
        sets[name] = load_dump(Path(path))
    fts5: dict[str, dict[str, list[str]]] = {}
    for spec in args.fts5:
        name, _, path = spec.partition("=")
        fts5[name] = {r["id"]: r["ranking"] for r in map(json.loads, Path(path).read_text().splitlines())}

    def part(name: str, row: dict[str, Any]) -> str:
        return "heldout" if name in args.heldout_set or row.get("split") == "test" else "dev"

    groups = {(name, p): [r for r in rows if part(name, r) == p] for name, rows in sets.items()
              for p in ("dev", "heldout")}
    groups = {key: rows for key, rows in groups.items() if rows}

    def score(rows: list[dict[str, Any]], ranking_of: Any) -> dict[str, float]:
        return mean_scores([score_question(ranking_of(r), r["relevant"]) for r in rows])

    arms: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    for key, rows in groups.items():
        arms[key] = {
            "bm25": score(rows, lambda r: r["bm25_docs"]),
            "dense": score(rows, lambda r: top_documents(None, (c for c, _ in r["vector"]), DOC_DEPTH)),  # type: ignore[arg-type]
        }
        if key[0] in fts5:
            table = fts5[key[0]]
            arms[key]["fts5"] = score(rows, lambda r, t=table: t[r["id"]][:DOC_DEPTH])
            arms[key]["rrf(fts5,dense)"] = score(rows, lambda r, t=table: rrf_docs(
                t[r["id"]], top_documents(None, (c for c, _ in r["vector"]), 100)))  # type: ignore[arg-type]

    table = load_profiles()
    keep = next((p for p in (table.default, *table.profiles) if p.name == args.keep), None)
    if keep is None:
        parser.error(f"--keep {args.keep!r}: no such profile")
    settings = {f"keep: {keep.name}": keep.settings, **grid()}
    base = SearchOptions()
    figures: dict[str, dict[tuple[str, str], dict[str, float]]] = {}
    for name, fields in settings.items():
        opts = base.model_validate({**base.model_dump(), **fields})
        figures[name] = {key: score(rows, lambda r, o=opts: hybrid_docs(r, o)) for key, rows in groups.items()}

    dev_keys = [key for key in groups if key[1] == "dev"]

    def objective(name: str) -> tuple[bool, float, float]:
        f = figures[name]
        ok = all(f[k]["ndcg@10"] >= arms[k]["bm25"]["ndcg@10"] - args.max_loss for k in dev_keys)
        margin = min(f[k]["ndcg@10"] - max(arms[k]["bm25"]["ndcg@10"], arms[k]["dense"]["ndcg@10"])
                     for k in dev_keys)
        mean = sum(f[k]["ndcg@10"] for k in dev_keys) / len(dev_keys)
        return ok, round(margin, 4), round(mean, 4)

    ranked = sorted(settings, key=lambda n: objective(n), reverse=True)
    best = ranked[0]
    kept = f"keep: {keep.name}"
    chosen = kept if objective(kept)[0] and objective(kept)[1] >= objective(best)[1] - args.tie else best

    print(f"embedder {args.embedder}; {len(settings)} settings scored; rule: hybrid >= bm25 - {args.max_loss} on "
          f"every dev set, then the best worst-case margin over max(bm25, dense), then mean (tie {args.tie} "
          f"keeps {keep.name})")
    print("\ntop settings on dev (ok, worst-case margin, mean nDCG@10):")
    for name in ranked[:8]:
        print(f"  {name:<58} {objective(name)}")
    print(f"  {kept:<58} {objective(kept)}")
    print(f"\nchosen: {chosen}")
    cols = ["bm25", "dense", "fts5", "rrf(fts5,dense)"]
    for p in ("dev", "heldout"):
        keys = [k for k in groups if k[1] == p]
        if not keys:
            continue
        print(f"\n{p} questions, nDCG@10 / Hit@1 / MRR / Recall@5")
        print(f"  {'set':<14} {'n':>4} " + " ".join(f"{c:>22}" for c in [*cols, 'kept', 'chosen']))
        for k in keys:
            cells = []
            for c in cols:
                m = arms[k].get(c)
                cells.append(f"{m['ndcg@10']:.3f}/{m['hit@1']:.3f}/{m['mrr']:.3f}/{m['recall@5']:.3f}"
                             if m else "-")
            for name in (kept, chosen):
                m = figures[name][k]
                cells.append(f"{m['ndcg@10']:.3f}/{m['hit@1']:.3f}/{m['mrr']:.3f}/{m['recall@5']:.3f}")
            print(f"  {k[0]:<14} {len(groups[k]):>4} " + " ".join(f"{c:>22}" for c in cells))
    fields = {f: settings[chosen].get(f, keep.settings.get(f)) for f in FUSION_FIELDS}
    print("\nprofile settings:", json.dumps(fields))
    if args.json is not None:
        args.json.write_text(json.dumps({
            "embedder": args.embedder, "chosen": chosen, "settings": fields,
            "questions": {f"{k[0]}/{k[1]}": len(rows) for k, rows in groups.items()},
            "arms": {f"{k[0]}/{k[1]}": v for k, v in arms.items()},
            "figures": {n: {f"{k[0]}/{k[1]}": v for k, v in f.items()} for n, f in figures.items()},
            "objective": {n: objective(n) for n in settings}}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

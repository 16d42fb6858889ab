"""Compare fusion functions on one bundle and question file, with each arm run once per question.

Runs gitrag's BM25 and vector arms (``query.search.fusion.rank_chunks``, anchor included) for every
question, keeps both chunk rankings, and scores several ways of fusing them at the document level
(a document takes the rank of its best chunk): RRF over chunks (what the server did up to
embedding input version 2), RRF over documents, each with other k and vector weights, and the
lexical anchor off, unrestricted, or restricted to BM25's top 1 or 3 documents; and the default
with blind RRF (no dense-arm confidence), other confidence thresholds and a confidence floor when the
dense arm's best document is among BM25's best (``confidence_top_floor``).

    .venv/bin/python bench/fusion_sweep.py --bundle STORE/bundles/<id> \\
        --questions ../shared/bench/xquad-de.qrels.jsonl --split dev [--json]

Prints nDCG@10 and MRR per variant next to the single arms.  Read-only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from artifacts.fusion import load_profiles  # noqa: E402
from query.bundle import open_bundle  # noqa: E402
from query.eval.retrieval import document_ranking, load_questions, select_questions  # noqa: E402
from query.search.anchor import apply_anchor  # noqa: E402
from query.search.filters import allowed_paths  # noqa: E402
from query.search.fusion import Ranking, fuse_rankings, rank_chunks  # noqa: E402
from query.search.metrics import mean_scores, score_question  # noqa: E402
from query.search.request import SearchOptions  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", required=True, type=Path)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--split", default="all", choices=["dev", "test", "all"])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dump", type=Path, default=None,
                        help="also write each question's two arm rankings (JSON lines: id, relevant, "
                             "bm25/vector [[chunk_id, path, score]], anchor) for offline fusion studies")
    parser.add_argument("--vectors-from", type=Path, default=None,
                        help="take each question's dense arm from a --dump file of the same bundle instead of "
                             "running the model (BM25 runs with the current code: score a BM25 change alone)")
    parser.add_argument("--from-dump", type=Path, default=None,
                        help="take both arms and the lexical anchor from a --dump file of the same bundle (no "
                             "model, no BM25: score fusion variants offline in seconds)")
    parser.add_argument("--no-grid", action="store_true",
                        help="score only the arms, the default, blind RRF and the confidence thresholds, not the "
                             "RRF grid (k, weights, level, anchor): quicker on large question files")
    parser.add_argument("--profile", default=None, metavar="NAME",
                        help="also score this profile of artifacts/fusion_profiles.json (default: the bundle's own "
                             "manifest.fusion, when it has one)")
    parser.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                        help="also score the default with these SearchOptions fields changed (repeatable; e.g. "
                             "confidence_top_floor=0.5,confidence_top_depth=5)")
    args = parser.parse_args()
    extra: dict[str, SearchOptions] = {}
    for spec in args.variant:
        try:
            fields = dict(item.split("=", 1) for item in spec.split(","))
            if set(fields) - set(SearchOptions.model_fields):
                raise ValueError(spec)
            extra[f"hybrid {spec}"] = SearchOptions.model_validate({**SearchOptions().model_dump(), **fields})
        except ValueError:
            parser.error(f"--variant {spec!r}: expected KEY=VALUE pairs of SearchOptions fields")

    bundle = open_bundle(args.bundle)
    qset = load_questions(args.questions)
    questions, _ = select_questions(qset, args.split, bundle.manifest.commit)
    base = SearchOptions()
    # Rankings carry the unrestricted lexical anchor; each variant below restricts it itself.
    unrestricted = base.model_copy(update={"anchor_bm25_rank": 10**9, "anchor": True})
    if args.from_dump is not None and (args.vectors_from is not None or args.dump is not None):
        parser.error("--from-dump cannot be combined with --vectors-from or --dump")
    dumped: dict[str, list[tuple[str, float]]] | None = None
    stored: dict[str, dict] = {}
    if args.from_dump is not None:
        with args.from_dump.open(encoding="utf-8") as fh:
            stored = {row["id"]: row for row in map(json.loads, fh)}
        missing = [q.id for q in questions if q.id not in stored]
        if missing:
            parser.error(f"{len(missing)} question(s) are not in the dump, e.g. {missing[0]}")
    if args.vectors_from is not None:
        with args.vectors_from.open(encoding="utf-8") as fh:
            dumped = {row["id"]: [(cid, float(sc)) for cid, _, sc in row["vector"]] for row in map(json.loads, fh)}
    runs = []
    for q in questions:
        if args.from_dump is not None:
            row = stored[q.id]
            ranking = Ranking(bm25=[(cid, float(sc)) for cid, _, sc in row["bm25"]],
                              vector=[(cid, float(sc)) for cid, _, sc in row["vector"]],
                              fused=[], fused_scores={}, anchor=row["anchor"])
        elif dumped is None:
            ranking = rank_chunks(bundle, q.question, depth=base.candidates, flt=q.filter, options=unrestricted)
        else:
            ranking = rank_chunks(bundle, q.question, depth=base.candidates, flt=q.filter, options=unrestricted,
                                  engines=("bm25",))
            ranking.vector = dumped[q.id]
        runs.append((q, ranking))

    # Documents each question can reach (its filter), as rank_chunks tells fuse_rankings.
    reach = {id(r): (len(allowed_paths(bundle, q.filter, True)) if q.filter is not None and not q.filter.is_empty()
                     else None) for q, r in runs}
    bm25_docs = {id(r): document_ranking(bundle, r.chunk_ids("bm25")) for _, r in runs}
    if args.dump is not None:
        with args.dump.open("w", encoding="utf-8") as fh:
            for q, r in runs:
                def rows(hits):  # type: ignore[no-untyped-def]
                    return [[cid, bundle.chunks[bundle.chunk_index[cid]].path, round(sc, 6)] for cid, sc in hits]
                fh.write(json.dumps({"id": q.id, "relevant": sorted(q.relevant), "bm25": rows(r.bm25),
                                     "vector": rows(r.vector), "anchor": r.anchor,
                                     "words": len(q.question.split()), "split": q.split,
                                     "reach": reach[id(r)] or len(bundle.docs)}, ensure_ascii=False) + "\n")

    def score(order_of: Callable[[object], list[str]]) -> dict[str, float]:
        return mean_scores([score_question(document_ranking(bundle, order_of(r)), q.relevant) for q, r in runs])


    def fused(ranking, opts: SearchOptions, anchor_rank: int | None = None) -> list[str]:  # type: ignore[no-untyped-def]
        order, scores, info = fuse_rankings(bundle, ranking.bm25, ranking.vector, opts, reach[id(ranking)])
        anchor = ranking.anchor  # the same lexical anchor the server applies
        if anchor is not None and anchor_rank is not None and anchor not in bm25_docs[id(ranking)][:anchor_rank]:
            anchor = None  # variant: anchor only a document BM25 itself ranks in its top anchor_rank
        if anchor is not None and anchor_rank != 0:
            apply_anchor(bundle, anchor, ranking.bm25, order, scores, info)
        return order

    rows: dict[str, dict[str, float]] = {
        "bm25": score(lambda r: r.chunk_ids("bm25")),  # type: ignore[attr-defined]
        "vector": score(lambda r: r.chunk_ids("vector")),  # type: ignore[attr-defined]
    }
    rows["hybrid (default)"] = score(lambda r: fused(r, base, base.anchor_bm25_rank))
    if args.profile is not None:
        table = load_profiles()
        chosen = next((p for p in (table.default, *table.profiles) if p.name == args.profile), None)
        if chosen is None:
            parser.error(f"--profile {args.profile!r}: not in artifacts/fusion_profiles.json")
        fusion: dict | None = chosen.manifest_value()
    else:
        fusion = bundle.manifest.fusion
    if fusion:
        own = base.for_bundle(fusion)
        rows[f"hybrid (profile {fusion.get('profile')})"] = score(lambda r: fused(r, own, own.anchor_bm25_rank
                                                                                  if own.anchor else 0))
    blind = base.model_copy(update={"vector_confidence": False})
    rows["hybrid (blind RRF: no confidence)"] = score(lambda r: fused(r, blind, base.anchor_bm25_rank))
    for z_none, z_full in ((1.0, 2.5), (2.0, 4.0), (3.0, 5.0), (4.0, 8.0)):
        opts = base.model_copy(update={"confidence_z_none": z_none, "confidence_z_full": z_full})
        rows[f"hybrid confidence z {z_none}-{z_full}"] = score(lambda r, o=opts: fused(r, o, base.anchor_bm25_rank))
    for top_depth in (3, 10):
        for top_floor in (0.5, 1.0):
            opts = base.model_copy(update={"confidence_top_floor": top_floor, "confidence_top_depth": top_depth})
            rows[f"hybrid confidence >= {top_floor} if dense top1 in bm25 top{top_depth}"] = score(
                lambda r, o=opts: fused(r, o, base.anchor_bm25_rank))
    for name, opts in extra.items():
        rows[name] = score(lambda r, o=opts: fused(r, o, o.anchor_bm25_rank))
    for level in () if args.no_grid else ("chunk", "document"):
        for k in (5, 10, 20, 60):
            for wv in (0.25, 0.5, 0.75, 1.0):
                for anchor_rank in (None, 0, 1, 3):
                    opts = base.model_copy(update={"rrf_k": k, "vector_weight": wv, "fusion_level": level})
                    name = {None: "any", 0: "off"}.get(anchor_rank, f"top{anchor_rank}")  # type: ignore[arg-type]
                    rows[f"rrf {level} k={k} wv={wv} anchor={name}"] = score(
                        lambda r, o=opts, a=anchor_rank: fused(r, o, a))
    bundle.close()
    if args.json:
        print(json.dumps({"questions": len(runs), "variants": rows}, indent=1))
        return
    print(f"{len(runs)} questions; bundle {args.bundle.name}")
    print(f"{'variant':<46} {'ndcg@10':>8} {'mrr':>8} {'hit@1':>8}")
    for name, m in rows.items():
        print(f"{name:<46} {m['ndcg@10']:>8.4f} {m['mrr']:>8.4f} {m['hit@1']:>8.4f}")


if __name__ == "__main__":
    main()

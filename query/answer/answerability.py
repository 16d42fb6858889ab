"""Answerability: one calibrated score of whether a unit of evidence states what the question asks.

A *unit* is the verbatim quote of a claim (a sentence, a list item, a table row, a list introduction)
read with the headings above it and its page title; a :class:`Window` is a sentence read with the unit
after it.  Its score is a fitted model (gradient-boosted trees with monotonic constraints, or a logistic
regression; ``query/answer/answerability.json``) over general signals, never over phrasings:

``sim``        cosine of the question's and the unit's vectors (the bundle's embedder, e5 prefixes);
``sim_gap``    ``sim`` minus the best ``sim`` among the units scored for the same question (<= 0);
``cov``        idf-weighted share of the question's content words the unit itself contains;
``ctx_cov``    the same share over the unit, its headings and the page title;
``item_cov``   the same share over the whole evidence item (the chunk the unit is cut from);
``novel``      share of the unit's content words that are not question words (an answer adds something);
``wants``      1 when the question's answer type is a kind of value (count, time, person, place, ...);
``holds``      1 when it is and the unit holds a value of that type (:func:`holds_value`);
``rank``       ``1 / (1 + r)`` for the unit's evidence item at retrieval rank ``r`` (0-based);
``length``     ``log(1 + words of the unit) / 4``;
``asks``       1 when the unit is itself a question (ends with ``?``);
``lacks``      1 when the question wants a kind of value and the unit holds none (``wants`` and not ``holds``);
``window``     1 for a :class:`Window` (a sentence read with the unit after it);
``type_<t>``, ``kind_<k>``  the question's answer type and the candidate's kind, one-hot.

Three fitted variants (``query/answer/answerability.json``): ``full`` (all signals; the calibrated embedder),
``lexical`` (no vector signals: another embedder or none) and ``dense`` (no word-overlap signals: the
question and the evidence are in different languages, so word overlap says nothing).  Each has one
threshold chosen on the dev pipeline for a target share of wrong answers; :meth:`UnitScorer.passes`
compares with it.  The model file's ``apply`` lists the variants the answer path uses: ``full`` and
``dense`` (the embedder the model was calibrated with); ``lexical`` is fitted and reported but not applied
(without vectors the rules alone decide: on the test wikis the lexical variant refused definitions the
rules answer, and it was never measured on foreign documentation).
The fit, the data it was fitted on and its figures: ``bench/answerability_fit.py`` and ``docs/answers.md``.

Language knowledge (number words, months, copulas) comes from the profiles; no word lives here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any

import numpy as np

from artifacts.text.profile import available, crosses_language, detect_language, load_profile
from artifacts.text.words import analyze, word_set
from query.answer.evidence import EvidenceItem
from query.question import QuestionAnalysis

ANSWER_TYPES = ("count", "quantity", "time", "person", "place", "procedure", "definition", "reason", "choice",
                "yes_no")
UNIT_KINDS = ("sentence", "item", "row", "window")
FEATURES = ("sim", "sim_gap", "cov", "ctx_cov", "item_cov", "novel", "wants", "holds", "rank", "length", "asks",
            "lacks", "window", *(f"type_{t}" for t in ANSWER_TYPES), *(f"kind_{k}" for k in UNIT_KINDS))
"""Feature names, in the order of the model's coefficients."""
VARIANT_FEATURES = {
    "full": FEATURES,
    "lexical": ("cov", "ctx_cov", "item_cov", "novel", "wants", "holds", "rank", "length", "asks", "lacks", "window"),
    "dense": ("sim", "sim_gap", "wants", "holds", "rank", "length", "asks", "lacks", "window"),
}

_DIGITS = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])|\d+(?=\s?%|[a-zA-Z]{1,3}\b)")
_DATE = re.compile(r"(?<!\d)(?:(?:1[5-9]|20)\d{2}|\d{1,2}\.\s?\d{1,2}\.(?:\s?\d{2,4})?|\d{4}-\d{2}(?:-\d{2})?|"
                   r"\d{1,2}[:.]\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?)(?!\d)")
_URLISH = re.compile(r"https?://|\b[\w-]+(?:\.[\w-]+)+(?::\d+)?(?:/\S*)?|(?:^|\s)[./~]?[\w.-]*/[\w./-]+|:\d{2,5}\b")
_CODEISH = re.compile(r"`[^`]+`|^\s*[$#>]\s")


@lru_cache(maxsize=1)
def _value_words() -> dict[str, frozenset[str]]:
    numbers: set[str] = set()
    dates: set[str] = set()
    copulas: set[str] = set()
    for code in available():
        prof = load_profile(code)
        numbers |= set(prof.number_words)
        dates |= {w.rstrip("*") for w in prof.months | prof.weekdays}
        copulas |= prof.words("copula")
    return {"numbers": frozenset(numbers), "dates": frozenset(dates), "copulas": frozenset(copulas)}


def _capitalised_run(text: str, least: int) -> bool:
    words = re.findall(r"[^\W\d_][\w'’.-]*", text)
    run = 0
    for i, word in enumerate(words):
        if i > 0 and word[0].isupper() and not word.isupper():
            run += 1
            if run >= least:
                return True
        else:
            run = 0
    return False


def holds_value(answer_type: str | None, text: str, *, kind: str = "sentence", leads: bool = False) -> bool:
    """True when ``text`` (one unit) holds a value of ``answer_type``.

    ``count``/``quantity``: a number in digits or a profile number word; ``time``: a year, date, clock
    time or a profile month/weekday; ``person``: two capitalised words in a row (not the first word);
    ``place``: an address, host, path or port, or a capitalised word past the first; ``procedure``: a
    list item, a list introduction (``leads``), a table row or inline code; ``definition``: a profile
    copula or an apposition (``:``, a dash).  Other types (and ``None``) hold nothing particular: False.
    """
    words = _value_words()
    tokens = analyze(text)
    if answer_type in ("count", "quantity"):
        return bool(_DIGITS.search(text)) or any(t in words["numbers"] for t in tokens)
    if answer_type == "time":
        return bool(_DATE.search(text)) or any(t.startswith(d) for t in tokens for d in words["dates"] if len(d) >= 3)
    if answer_type == "person":
        return _capitalised_run(text, 2)
    if answer_type == "place":
        return bool(_URLISH.search(text)) or _capitalised_run(text, 1)
    if answer_type == "procedure":
        return kind in ("item", "row") or leads or bool(_CODEISH.search(text))
    if answer_type == "definition":
        return any(t in words["copulas"] for t in tokens) or bool(re.search(r"\s[:\u2013\u2014-]\s|:\s", text))
    return False


@dataclass(frozen=True)
class Variant:
    """One fitted logistic model: ``features`` (names), ``coef`` and ``intercept``, and ``threshold`` (0..1)."""

    name: str
    features: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float
    reached: bool = True
    """False when no threshold met the calibration target on the dev pipeline: the variant is not applied."""

    trees: tuple[Mapping[str, Any], ...] = ()
    """Gradient-boosted trees (``kind: trees`` in the JSON, exported from scikit-learn's
    ``HistGradientBoostingClassifier``): each ``{feature, threshold, left, right, leaf, value, missing_left}``
    as parallel lists over its nodes (node 0 the root); ``intercept`` is then the baseline log-odds and
    ``coef`` is empty."""

    def probability(self, values: Mapping[str, float]) -> float:
        """Return the model's probability (0..1) for a feature mapping (missing features count 0)."""
        return float(self.probabilities([values])[0])

    def probabilities(self, rows: Sequence[Mapping[str, float]]) -> np.ndarray:
        """Return the model's probabilities (0..1, float64, one per row) for feature mappings (missing features
        count 0).  The trees are evaluated for all rows and trees at once, one array step per tree level."""
        x = np.array([[float(r.get(f, 0.0)) for f in self.features] for r in rows], dtype=np.float64)
        x = x.reshape(len(rows), len(self.features))
        if not self.trees:
            z = self.intercept + x @ np.asarray(self.coef, dtype=np.float64)
        else:
            z = self.intercept + self._tree_sum(x)
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))

    def _tree_sum(self, x: np.ndarray) -> np.ndarray:
        arrays = self._tree_arrays
        feature, threshold, left, right, leaf, value, missing_left = (arrays[k] for k in (
            "feature", "threshold", "left", "right", "leaf", "value", "missing_left"))
        trees = np.arange(feature.shape[0])[None, :]
        rows = np.arange(x.shape[0])[:, None]
        node = np.zeros((x.shape[0], feature.shape[0]), dtype=np.int64)
        for _level in range(int(arrays["depth"])):
            at = (trees, node)
            v = x[rows, feature[at]]
            go_left = np.where(np.isnan(v), missing_left[at], v <= threshold[at])
            node = np.where(leaf[at], node, np.where(go_left, left[at], right[at]))
        total: np.ndarray = value[trees, node].sum(axis=1)
        return total

    @cached_property
    def _tree_arrays(self) -> dict[str, np.ndarray]:
        """The trees as padded ``(trees, nodes)`` arrays, and ``depth`` (the longest root-to-leaf path)."""
        size = max(len(t["leaf"]) for t in self.trees)

        def padded(key: str, dtype: Any, fill: Any) -> np.ndarray:
            out = np.full((len(self.trees), size), fill, dtype=dtype)
            for i, tree in enumerate(self.trees):
                out[i, : len(tree[key])] = tree[key]
            return out

        depth = 0
        for tree in self.trees:
            stack = [(0, 0)]
            while stack:
                node, d = stack.pop()
                if tree["leaf"][node]:
                    depth = max(depth, d)
                else:
                    stack += [(tree["left"][node], d + 1), (tree["right"][node], d + 1)]
        return {"feature": padded("feature", np.int64, 0), "threshold": padded("threshold", np.float64, 0.0),
                "left": padded("left", np.int64, 0), "right": padded("right", np.int64, 0),
                "leaf": padded("leaf", bool, True), "value": padded("value", np.float64, 0.0),
                "missing_left": padded("missing_left", bool, True), "depth": np.asarray(depth)}


@dataclass(frozen=True)
class AnswerabilityModel:
    """The fitted variants and what they were fitted for (``embedder``: the model id of the ``sim`` feature)."""

    variants: Mapping[str, Variant]
    embedder: str | None
    meta: Mapping[str, Any]
    apply: frozenset[str] = frozenset({"full", "lexical", "dense"})
    """The variants the answer path applies (the JSON's ``apply``); the others are fitted and reported only."""

    def reads(self, embedder: Any) -> bool:
        """True when ``embedder`` (an object with ``spec.model_id``, e.g. a bundle's embedder) is the one the
        ``sim`` features were calibrated with: only then may a variant with vector features judge its units."""
        return embedder is not None and getattr(getattr(embedder, "spec", None), "model_id", None) == self.embedder

    def judges_across_languages(self, embedder: Any) -> bool:
        """True when the ``dense`` variant (no word overlap) is applied, reached its target and reads ``embedder``."""
        dense = self.variants.get("dense")
        return "dense" in self.apply and dense is not None and dense.reached and self.reads(embedder)

    @property
    def fingerprint(self) -> str:
        """A short stable id of the coefficients and thresholds (part of the answer cache key)."""
        import hashlib

        blob = json.dumps({k: [v.coef, v.intercept, v.threshold, v.reached, v.trees]
                           for k, v in sorted(self.variants.items())})
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


def trees_from_sklearn(model: Any) -> list[dict[str, list[Any]]]:
    """The trees of a fitted binary scikit-learn ``HistGradientBoostingClassifier`` in the JSON form
    :class:`Variant` evaluates (parallel node lists; its baseline log-odds is
    ``model._baseline_prediction``).  Used by ``bench/answerability_fit.py --model trees``."""
    out: list[dict[str, list[Any]]] = []
    for predictors in model._predictors:  # one list per boosting iteration, one predictor for a binary task
        nodes = predictors[0].nodes
        out.append({"feature": [int(v) for v in nodes["feature_idx"]],
                    "threshold": [float(v) for v in nodes["num_threshold"]],
                    "left": [int(v) for v in nodes["left"]], "right": [int(v) for v in nodes["right"]],
                    "leaf": [bool(v) for v in nodes["is_leaf"]], "value": [round(float(v), 6) for v in nodes["value"]],
                    "missing_left": [bool(v) for v in nodes["missing_go_to_left"]]})
    return out


def model_from(data: Mapping[str, Any]) -> AnswerabilityModel:
    """Build an :class:`AnswerabilityModel` from its JSON form (see ``query/answerability.json``).

    Raises:
        ValueError: a variant's coefficients do not match its feature names.
    """
    variants = {}
    for name, body in data["variants"].items():
        feats = tuple(body["features"])
        coef = tuple(float(c) for c in body.get("coef") or ())
        trees = tuple(body.get("trees") or ())
        if not set(feats) <= set(FEATURES) or (not trees and len(feats) != len(coef)) or any(
                not all(0 <= i < len(feats) for i, leaf in zip(t["feature"], t["leaf"], strict=True) if not leaf)
                for t in trees):
            raise ValueError(f"answerability variant {name}: features and coefficients do not match")
        variants[name] = Variant(name, feats, coef, float(body["intercept"]), float(body["threshold"]),
                                 bool(body.get("reached", True)), trees)
    apply = frozenset(data.get("apply") or variants)
    return AnswerabilityModel(variants, data.get("embedder"), dict(data.get("meta") or {}), apply)


@lru_cache(maxsize=1)
def default_model() -> AnswerabilityModel | None:
    """Return the installed model (``query/answerability.json``), or None when it is not there."""
    path = resources.files("query.answer") / "answerability.json"
    if not path.is_file():
        return None
    return model_from(json.loads(path.read_text(encoding="utf-8")))


def coverage_share(words: Sequence[str], weights: Mapping[str, float], text: str) -> float:
    """Return the idf-weighted share (0..1) of ``words`` that ``text`` contains (inflection-tolerant)."""
    if not words:
        return 0.0
    have = word_set(text)
    total = sum(weights.get(w, 1.0) for w in words)
    got = sum(weights.get(w, 1.0) for w in words if have.has(w))
    return got / total if total > 0 else 0.0


def _novel(words: Sequence[str], unit: str) -> float:
    from artifacts.text.words import content_words

    own = content_words(unit)
    if not own:
        return 0.0
    asked = word_set(" ".join(words))
    return sum(1 for w in own if not asked.has(w)) / len(own)


def kind_type_features(answer_type: str | None, kind: str) -> dict[str, float]:
    """One-hot features of the question's answer type (``type_<t>``) and the unit's kind (``kind_<k>``)."""
    return {**{f"type_{t}": 1.0 if answer_type == t else 0.0 for t in ANSWER_TYPES},
            **{f"kind_{k}": 1.0 if kind == k else 0.0 for k in UNIT_KINDS}}


def unit_features(analysis: QuestionAnalysis, weights: Mapping[str, float], unit: str, context: str, rank: int,
                  *, sim: float = 0.0, sim_best: float = 0.0, kind: str = "sentence", leads: bool = False,
                  item_text: str = "") -> dict[str, float]:
    """Return the feature mapping of one unit (see the module docstring; every value is a float).

    ``context``: the unit's headings and page title; ``item_text``: the whole evidence item's text.
    """
    words = analysis.content_words
    cov = coverage_share(words, weights, unit)
    ctx = max(cov, coverage_share(words, weights, unit + "\n" + context))
    whole = max(ctx, coverage_share(words, weights, item_text + "\n" + context)) if item_text else ctx
    wants = 1.0 if analysis.wants_value else 0.0
    holds = 1.0 if wants and holds_value(analysis.answer_type, unit, kind=kind, leads=leads) else 0.0
    return {
        "sim": sim, "sim_gap": sim - sim_best, "cov": cov, "ctx_cov": ctx, "item_cov": whole,
        "novel": _novel(words, unit), "wants": wants, "holds": holds,
        "rank": 1.0 / (1.0 + rank), "length": math.log1p(len(unit.split())) / 4.0,
        "asks": 1.0 if unit.rstrip().endswith("?") else 0.0,
        "lacks": 1.0 if wants and not holds else 0.0, "window": 1.0 if kind == "window" else 0.0,
        **kind_type_features(analysis.answer_type, kind),
    }


def item_context(item: EvidenceItem) -> str:
    """The headings and title a unit of ``item`` is read with (one string)."""
    return "\n".join([item.title or "", *item.heading_path])


Scored = tuple[float, dict[str, float], EvidenceItem, Any]
"""``(probability, features, item, unit)`` of one scored unit."""


class UnitScorer:
    """Scores the units of one request's evidence with the installed model.

    ``embedder``: the bundle's query embedder (``embed_query``/``embed_passages``) or None; the ``full``
    variant is used only when its model id is the one the model was calibrated with, and ``dense``
    when the question's language differs from the evidence's.  Vectors are computed lazily, once per
    distinct unit text (one batch per :meth:`score_many`).
    """

    def __init__(self, analysis: QuestionAnalysis, items: Sequence[EvidenceItem], embedder: Any = None,
                 weights: Mapping[str, float] | None = None, model: AnswerabilityModel | None = None) -> None:
        self.analysis = analysis
        self.items = list(items)
        self.rank = {it.evidence_id: i for i, it in enumerate(self.items)}
        self.model = model if model is not None else default_model()
        self.weights = dict(weights or {})
        self.embedder = embedder if self.model is not None and self.model.reads(embedder) else None
        self._qvec: np.ndarray | None = None
        self._vecs: dict[str, np.ndarray] = {}
        self._best = -1.0
        self.scores: list[tuple[str, float]] = []
        # the question crosses languages when the best evidence item is in another language than it
        first = next((it for it in self.items if it.kind == "chunk"), None)
        crossing = first is not None and crosses_language(analysis.language, [detect_language(first.text)])
        self.crossing = crossing
        # no variant reads a question in another language without vectors: the score then decides nothing
        self.variant_name: str | None
        if self.embedder is not None:
            self.variant_name = "dense" if crossing else "full"
        else:
            self.variant_name = None if crossing else "lexical"
        self._primed: dict[tuple[str, ...], list[Scored]] = {}

    @property
    def variant(self) -> Variant | None:
        """The variant in use, or None when no model is installed or the variant did not reach its
        calibration target (then the score decides nothing: gate and rescue are off)."""
        if self.model is None or self.variant_name is None or self.variant_name not in self.model.apply:
            return None
        variant = self.model.variants.get(self.variant_name)
        return variant if variant is not None and variant.reached else None

    def _sims(self, texts: Sequence[str]) -> list[float]:
        if self.embedder is None:
            return [0.0] * len(texts)
        if self._qvec is None:
            self._qvec = np.asarray(self.embedder.embed_query(self.analysis.text), dtype=np.float32)
        todo = [t for t in dict.fromkeys(texts) if t not in self._vecs]
        if todo:
            vecs = np.asarray(self.embedder.embed_passages(list(todo)), dtype=np.float32)
            for text, vec in zip(todo, vecs, strict=True):
                self._vecs[text] = vec
        sims = [float(self._vecs[t] @ self._qvec) for t in texts]
        self._best = max([self._best, *sims])
        return sims

    def score_many(self, units: Sequence[tuple[str, EvidenceItem]], *, kinds: Sequence[str] | None = None,
                   leads: Sequence[bool] | None = None) -> list[tuple[float, dict[str, float]]]:
        """Return ``(probability, features)`` for each ``(unit text, evidence item)``.

        ``sim_gap`` is measured against the best similarity among every unit this scorer has scored so far
        (the batch included).  Probability 1.0 for every unit when no model is installed.
        """
        texts = [u for u, _ in units]
        sims = self._sims(texts)
        variant = self.variant
        rows = [unit_features(self.analysis, self.weights, text, item_context(item), self.rank.get(item.evidence_id, 0),
                              sim=sims[i], sim_best=self._best, kind=kinds[i] if kinds else "sentence",
                              leads=bool(leads[i]) if leads else False, item_text=item.text)
                for i, (text, item) in enumerate(units)]
        probs = variant.probabilities(rows) if variant is not None and rows else np.ones(len(rows))
        return [(float(p), feats) for p, feats in zip(probs, rows, strict=True)]

    def prime(self, items: Sequence[EvidenceItem] | None = None) -> list[Scored]:
        """Score the candidate units of ``items`` (default: the scorer's evidence) once and return
        ``(probability, features, item, unit)`` for each, in pool order (cached per evidence).

        The pool is :func:`unit_pool`; when it holds more than :data:`SHORTLIST` units (and the question is in
        the evidence's language) only the :data:`SHORTLIST` best by the ``lexical`` variant are scored with the
        variant in use (one embedding batch).  Priming first makes ``sim_gap`` the gap to the best unit of
        this pool for every unit scored afterwards (a rule's claim as much as a rescued unit), as in the fit.
        """
        items = list(self.items if items is None else items)
        key = tuple(it.evidence_id for it in items)
        if key in self._primed:
            return self._primed[key]
        pool = unit_pool(items)
        lexical = self.model.variants.get("lexical") if self.model is not None else None
        if lexical is not None and len(pool) > SHORTLIST and self.variant_name != "dense":
            probs = lexical.probabilities([unit_features(self.analysis, self.weights, text, item_context(it),
                                                         self.rank.get(it.evidence_id, 0), kind=u.kind,
                                                         leads=u.leads is not None, item_text=it.text)
                                           for it, u, text in pool])
            order = sorted(range(len(pool)), key=lambda i: -float(probs[i]))
            pool = [pool[i] for i in order[:SHORTLIST]]
        elif len(pool) > SHORTLIST:
            pool = pool[: SHORTLIST * 2]
        scored = self.score_many([(text, it) for it, _u, text in pool], kinds=[u.kind for _it, u, _t in pool],
                                 leads=[u.leads is not None for _it, u, _t in pool]) if pool else []
        out = [(p, f, it, u) for (p, f), (it, u, _t) in zip(scored, pool, strict=True)]
        self._primed[key] = out
        return out

    def passes(self, probability: float) -> bool:
        """True when ``probability`` reaches the variant's threshold (always True with no model)."""
        variant = self.variant
        return variant is None or probability >= variant.threshold


def find_unit(quote: str, item: EvidenceItem) -> Any:
    """Return the :class:`~query.answer.sentences.Unit` of ``item`` whose text is ``quote`` (spaces folded), or None."""
    from query.answer.sentences import text_units

    want = " ".join(quote.split())
    for unit in text_units(item.text):
        if " ".join(unit.text.split()) == want:
            return unit
    return None


def gate_claims(scorer: UnitScorer, verdicts: Sequence[Any], items: Sequence[EvidenceItem], fail: Any) -> list[Any]:
    """Fail (with ``fail(verdict, details)``) every passing claim whose quote scores below the threshold.

    Claims citing graph items are not scored (graph facts answer by construction).  A list item passes with
    its list when the list's introduction passed (the introduction states what the items are).  The scores
    are kept in ``scorer.scores`` (``[(quote, probability)]``) for the debug report.
    """
    if scorer.variant is None:
        return list(verdicts)
    by_id = {it.evidence_id: it for it in items}
    todo = []
    for i, v in enumerate(verdicts):
        item = by_id.get(v.claim.evidence[0]) if v.ok and v.claim.evidence else None
        if item is None or item.kind != "chunk":
            continue
        todo.append((i, item, find_unit(v.claim.quote, item)))
    if not todo:
        return list(verdicts)
    scorer.prime(items)
    from query.answer.sentences import scoring_text, text_units

    scored = scorer.score_many([(scoring_text(u, text_units(item.text)) if u is not None else verdicts[i].claim.quote,
                                 item) for i, item, u in todo],
                               kinds=[u.kind if u is not None else "sentence" for _i, _it, u in todo],
                               leads=[u is not None and u.leads is not None for _i, _it, u in todo])
    passed_lists = {(item.evidence_id, u.leads) for (_i, item, u), (p, _f) in zip(todo, scored, strict=True)
                    if u is not None and u.leads is not None and scorer.passes(p)}
    out = list(verdicts)
    variant = scorer.variant
    for (i, item, unit), (p, _f) in zip(todo, scored, strict=True):
        scorer.scores.append((verdicts[i].claim.quote, round(p, 4)))
        if scorer.passes(p):
            continue
        if unit is not None and unit.list_id is not None and (item.evidence_id, unit.list_id) in passed_lists:
            continue
        threshold = variant.threshold if variant is not None else 0.0
        out[i] = fail(verdicts[i], [f"answerability {p:.2f} below {threshold:.2f} ({scorer.variant_name})"])
    return out


SHORTLIST = 12
"""Units of one question's evidence scored with the variant in use (the ``lexical`` variant's best)."""


@dataclass(frozen=True)
class Window:
    """Two adjacent units of one section read as one candidate: a sentence and the unit after it (a
    setting's description and the block that states its value, a sentence and the command it explains).
    Delivered as its units' verbatim claims, each checked on its own."""

    units: tuple[Any, ...]

    @property
    def kind(self) -> str:
        return "window"

    @property
    def leads(self) -> int | None:
        return None

    @property
    def order(self) -> int:
        return int(self.units[0].order)

    @property
    def text(self) -> str:
        return "\n".join(u.text for u in self.units)


def unit_pool(items: Sequence[EvidenceItem]) -> list[tuple[EvidenceItem, Any, str]]:
    """Every candidate of the chunk ``items`` as ``(item, unit, scoring text)``, in evidence order.

    Candidates are the units (:func:`query.answer.sentences.text_units`) and the :class:`Window` of each
    sentence with the next unit under the same headings.  Left out: code blocks (judged with the sentence
    that introduces them), table header rows (they name cells only), instructions to a model and bare links.
    The scoring text is :func:`query.answer.sentences.scoring_text` (an introduction with its block, a row
    with its header; a window: both of its units').
    """
    from query.answer.sentences import addresses_model, link_only, scoring_text, text_units

    pool: list[tuple[EvidenceItem, Any, str]] = []
    for item in items:
        if item.kind != "chunk":
            continue
        units = text_units(item.text)
        usable = [u for u in units if not (u.kind == "row" and not u.header)
                  and not addresses_model(u.text) and not link_only(u.text)]
        for unit in usable:
            if unit.kind != "code":
                pool.append((item, unit, scoring_text(unit, units)))
        for first, second in zip(usable, usable[1:], strict=False):
            # a sentence that introduces a block is read with it already; a code block introduced by a
            # sentence belongs to that sentence
            if first.kind != "sentence" or first.leads is not None or first.headings != second.headings:
                continue
            if second.kind == "code" and any(u.leads == second.list_id for u in units):
                continue
            pool.append((item, Window((first, second)),
                         scoring_text(first, units) + "\n" + scoring_text(second, units)))
    return pool


def best_units(scorer: UnitScorer, items: Sequence[EvidenceItem]) -> list[tuple[float, Any, Any]]:
    """Return ``(probability, item, unit)`` of the evidence's units that reach the threshold, best first
    (the units :meth:`UnitScorer.prime` scored)."""
    if scorer.variant is None:
        return []
    out = [(p, it, u) for p, _f, it, u in scorer.prime(items) if scorer.passes(p)]
    out.sort(key=lambda x: -x[0])
    return out


__all__ = ["FEATURES", "VARIANT_FEATURES", "AnswerabilityModel", "UnitScorer", "Variant", "coverage_share",
           "SHORTLIST", "best_units", "default_model", "find_unit", "gate_claims", "holds_value", "item_context",
           "model_from", "trees_from_sklearn", "unit_features", "unit_pool", "Window"]

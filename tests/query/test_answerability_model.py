"""The answerability model file: a logistic variant and a gradient-boosted-trees variant exported from
scikit-learn give the probabilities of the fitted model (the answer path evaluates the JSON form)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from query.answer.answerability import FEATURES, default_model, model_from, trees_from_sklearn


def test_exported_trees_give_the_probabilities_of_the_fitted_model() -> None:
    ensemble = pytest.importorskip("sklearn.ensemble")
    rng = np.random.default_rng(7)
    feats = ["sim", "cov", "holds", "rank"]
    x = rng.random((400, len(feats)))
    y = (x[:, 0] + 0.5 * x[:, 1] * x[:, 2] + 0.1 * rng.standard_normal(400) > 0.9).astype(int)
    fitted = ensemble.HistGradientBoostingClassifier(max_depth=3, max_iter=40, random_state=0).fit(x, y)
    model = model_from({"variants": {"full": {
        "features": feats, "kind": "trees", "coef": [], "threshold": 0.5,
        "intercept": float(np.ravel(fitted._baseline_prediction)[0]), "trees": trees_from_sklearn(fitted)}}})
    variant = model.variants["full"]
    expected = fitted.predict_proba(x[:50])[:, 1]
    got = [variant.probability(dict(zip(feats, row, strict=True))) for row in x[:50]]
    assert np.allclose(got, expected, atol=1e-5)


def test_a_logistic_variant_is_the_sigmoid_of_its_linear_score() -> None:
    model = model_from({"variants": {"full": {"features": ["sim", "cov"], "coef": [2.0, -1.0], "intercept": 0.5,
                                              "threshold": 0.5}}})
    p = model.variants["full"].probability({"sim": 1.0, "cov": 2.0})
    assert math.isclose(p, 1 / (1 + math.exp(-0.5)))


def test_the_installed_model_reads_only_known_features() -> None:
    model = default_model()
    assert model is not None
    for variant in model.variants.values():
        assert set(variant.features) <= set(FEATURES)
        assert 0.0 < variant.threshold < 1.0


def test_a_tree_that_names_a_feature_it_does_not_have_is_refused() -> None:
    tree = {"feature": [5, 0, 0], "threshold": [0.5, 0, 0], "left": [1, 0, 0], "right": [2, 0, 0],
            "leaf": [False, True, True], "value": [0, 0.1, -0.1], "missing_left": [True, False, False]}
    with pytest.raises(ValueError):
        model_from({"variants": {"full": {"features": ["sim"], "kind": "trees", "coef": [], "intercept": 0.0,
                                          "threshold": 0.5, "trees": [tree]}}})


def test_trees_evaluated_for_many_rows_at_once_match_scikit_learn_with_missing_values() -> None:
    ensemble = pytest.importorskip("sklearn.ensemble")
    rng = np.random.default_rng(11)
    feats = ["sim", "cov", "holds"]
    x = rng.random((300, len(feats)))
    x[rng.random(x.shape) < 0.1] = np.nan  # missing values follow each node's missing_left
    y = (np.nan_to_num(x[:, 0]) + np.nan_to_num(x[:, 1]) > 1.0).astype(int)
    fitted = ensemble.HistGradientBoostingClassifier(max_depth=4, max_iter=30, random_state=0).fit(x, y)
    model = model_from({"variants": {"full": {
        "features": feats, "kind": "trees", "coef": [], "threshold": 0.5,
        "intercept": float(np.ravel(fitted._baseline_prediction)[0]), "trees": trees_from_sklearn(fitted)}}})
    rows = [dict(zip(feats, row, strict=True)) for row in x]
    got = model.variants["full"].probabilities(rows)
    assert got.shape == (300,)
    assert np.allclose(got, fitted.predict_proba(x)[:, 1], atol=1e-5)
    assert model.variants["full"].probability(rows[3]) == pytest.approx(float(got[3]))


def test_the_model_reads_only_the_embedder_it_was_calibrated_with() -> None:
    model = default_model()
    assert model is not None and model.embedder

    class Spec:
        def __init__(self, model_id: str) -> None:
            self.model_id = model_id

    class Embedder:
        def __init__(self, model_id: str) -> None:
            self.spec = Spec(model_id)

    assert model.reads(Embedder(model.embedder))
    assert not model.reads(Embedder("hash-64")) and not model.reads(None)
    assert model.judges_across_languages(Embedder(model.embedder)) == (
        "dense" in model.apply and model.variants["dense"].reached)

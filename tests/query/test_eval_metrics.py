"""Ranking metrics against values computed by hand on a tiny fixture."""

from __future__ import annotations

import math

import pytest

from query.search.metrics import METRICS, first_relevant_rank, mean_scores, ndcg_at, recall_at, score_question


def test_one_relevant_document_at_rank_two() -> None:
    scores = score_question(["a", "b", "c"], {"b"})
    assert scores == {"hit@1": 0.0, "hit@3": 1.0, "hit@5": 1.0, "mrr": 0.5, "recall@5": 1.0,
                      "ndcg@10": pytest.approx(1 / math.log2(3))}  # 0.6309


def test_two_relevant_documents_one_found_late() -> None:
    ranking = ["x1", "r1", "x2", "x3", "x4", "x5", "r2"]
    scores = score_question(ranking, ["r1", "r2"])
    assert scores["hit@1"] == 0.0 and scores["hit@3"] == 1.0
    assert scores["mrr"] == 0.5
    assert scores["recall@5"] == 0.5
    # DCG = 1/log2(3) + 1/log2(8) = 0.63093 + 0.33333; IDCG = 1 + 1/log2(3) = 1.63093
    assert scores["ndcg@10"] == pytest.approx((0.630930 + 1 / 3) / 1.630930, abs=1e-6)
    assert round(scores["ndcg@10"], 4) == 0.5912


def test_nothing_relevant_found_scores_zero() -> None:
    assert score_question(["a", "b"], {"z"}) == {name: 0.0 for name in METRICS}
    assert first_relevant_rank(["a", "b"], {"z"}) is None
    assert first_relevant_rank(["a", "b"], {"b"}) == 2


def test_ndcg_cuts_at_k_and_recall_needs_relevant() -> None:
    assert ndcg_at(["x"] * 10 + ["r"], {"r"}, 10) == 0.0
    assert ndcg_at(["r"], {"r"}, 10) == 1.0
    with pytest.raises(ValueError):
        recall_at(["a"], set(), 5)


def test_mean_over_questions() -> None:
    per = [score_question(["a"], {"a"}), score_question(["b", "a"], {"a"}), score_question(["b"], {"a"})]
    means = mean_scores(per)
    assert means["hit@1"] == round(1 / 3, 4) and means["hit@3"] == round(2 / 3, 4)
    assert means["mrr"] == round((1 + 0.5 + 0) / 3, 4)
    assert means["ndcg@10"] == round((1 + 1 / math.log2(3)) / 3, 4)
    assert mean_scores([]) == {name: 0.0 for name in METRICS}

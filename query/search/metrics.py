"""Ranking metrics over document rankings: Hit@k, MRR, Recall@k, nDCG@k (binary relevance).

Every function takes ``ranking`` (document paths, best first, no duplicates) and ``relevant`` (the
set of relevant document paths, non-empty) and returns a float in [0, 1].  Aggregates are plain
means over questions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

METRICS = ("hit@1", "hit@3", "hit@5", "mrr", "recall@5", "ndcg@10")
"""Names of the metrics reported per engine, in report order."""


def first_relevant_rank(ranking: Sequence[str], relevant: Iterable[str]) -> int | None:
    """Return the 1-based rank of the first relevant document in ``ranking``, or ``None``."""
    wanted = set(relevant)
    for rank, doc in enumerate(ranking, start=1):
        if doc in wanted:
            return rank
    return None


def hit_at(ranking: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Return 1.0 when a relevant document is among the first ``k``, else 0.0."""
    rank = first_relevant_rank(ranking[:k], relevant)
    return 1.0 if rank is not None else 0.0


def reciprocal_rank(ranking: Sequence[str], relevant: Iterable[str]) -> float:
    """Return 1 / rank of the first relevant document, or 0.0 when none is ranked."""
    rank = first_relevant_rank(ranking, relevant)
    return 0.0 if rank is None else 1.0 / rank


def recall_at(ranking: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Return the fraction of relevant documents among the first ``k``."""
    wanted = set(relevant)
    if not wanted:
        raise ValueError("relevant must not be empty")
    return len(wanted & set(ranking[:k])) / len(wanted)


def ndcg_at(ranking: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Return binary nDCG@k: sum of 1/log2(rank+1) over relevant hits, divided by the ideal sum."""
    wanted = set(relevant)
    if not wanted:
        raise ValueError("relevant must not be empty")
    dcg = sum(1.0 / math.log2(rank + 1) for rank, doc in enumerate(ranking[:k], start=1) if doc in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


def score_question(ranking: Sequence[str], relevant: Iterable[str]) -> dict[str, float]:
    """Return every metric of :data:`METRICS` for one question."""
    wanted = set(relevant)
    return {
        "hit@1": hit_at(ranking, wanted, 1),
        "hit@3": hit_at(ranking, wanted, 3),
        "hit@5": hit_at(ranking, wanted, 5),
        "mrr": reciprocal_rank(ranking, wanted),
        "recall@5": recall_at(ranking, wanted, 5),
        "ndcg@10": ndcg_at(ranking, wanted, 10),
    }


def mean_scores(per_question: Sequence[dict[str, float]], digits: int = 4) -> dict[str, float]:
    """Return the mean of each metric over questions, rounded to ``digits`` (0.0 for no questions)."""
    if not per_question:
        return {name: 0.0 for name in METRICS}
    return {name: round(sum(q[name] for q in per_question) / len(per_question), digits) for name in METRICS}

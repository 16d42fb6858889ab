"""Typo forms of misspelt words: Whoosh's automaton walk per segment against the BM25 matrix's vocabulary.

Misspells ``--words`` indexed body words of a bundle (one letter replaced, inserted or deleted, at a
fixed seed), finds each one's forms in every folded field both ways (``terms_within(..., prefix=1)``
filtered to live terms, and :func:`query.search.typos.near_terms`), counts the words whose forms differ
and prints the CPU time (``time.process_time``) of each way, the matrix's per-letter arrays built on
first use included.

    .venv/bin/python bench/typo_forms.py --bundle STORE/bundles/<id> [--words 300]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from artifacts.analysis import FOLDED_FIELDS  # noqa: E402
from query.bundle import open_bundle  # noqa: E402
from query.search.terms import _indexed  # noqa: E402
from query.search.typos import near_terms  # noqa: E402
from query.search.weighting import bm25_matrix, ranking_searcher  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", required=True, type=Path)
    parser.add_argument("--words", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    bundle = open_bundle(args.bundle, load_model=False)
    matrix, searcher = bm25_matrix(bundle), ranking_searcher(bundle)
    if matrix is None:
        sys.exit("this bundle has no bm25/ matrix")
    rng = random.Random(args.seed)
    vocab = [t for t in matrix.terms["body"] if len(t) >= 4 and not t.isdigit()]
    words = []
    for term in rng.sample(vocab, min(args.words, len(vocab))):
        at, op, ch = rng.randrange(1, len(term)), rng.choice("sid"), rng.choice("abcdefghijklmnoprstuvz")
        words.append(term[:at] + ch + term[at + 1:] if op == "s" else term[:at] + ch + term[at:] if op == "i"
                     else term[:at] + term[at + 1:])
    differ, whoosh_s, matrix_s = 0, 0.0, 0.0
    for word in words:
        maxdist = 2 if len(word) >= 8 else 1
        for f in FOLDED_FIELDS:
            t0 = time.process_time()
            a = sorted(w for w in searcher.reader().terms_within(f, word, maxdist, prefix=1)
                       if _indexed(bundle, searcher, f, w))
            t1 = time.process_time()
            b = near_terms(bundle, matrix, f, word, maxdist)
            t2 = time.process_time()
            whoosh_s, matrix_s, differ = whoosh_s + t1 - t0, matrix_s + t2 - t1, differ + (a != b)
    print(f"{len(words)} misspelt words x {len(FOLDED_FIELDS)} fields; differing: {differ}; CPU: whoosh "
          f"{whoosh_s * 1000:.0f} ms, matrix {matrix_s * 1000:.0f} ms ({whoosh_s / max(matrix_s, 1e-9):.1f}x)")
    bundle.close()


if __name__ == "__main__":
    main()

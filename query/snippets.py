"""Result snippets: the best-matching passage of a chunk, matched words marked.

Uses Whoosh's highlighter (:mod:`whoosh.highlight`): the chunk text is tokenised with the index's
folding analyzer (:func:`artifacts.analysis.folding_analyzer`, so ``prace`` marks ``práce``),
tokens are matched against the query's words and stem prefixes (the same forms BM25 searches,
so ``sítě`` marks ``sítích``), a :class:`~whoosh.highlight.ContextFragmenter` cuts passages around
matches, and the passage with the highest score (sum of the matched words' weights times the
number of distinct words, Whoosh's ``BasicFragmentScorer``) is returned.  Weights are the words'
idf, so a passage with the rare words of a query beats one full of function words; words that
occur in most chunks are not marked at all.

A chunk found only by the vector arm may contain no query word: its snippet is the chunk start.
Marks are ``**word**`` (Markdown bold), which is plain text in JSON and safe to show anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from whoosh.highlight import BasicFragmentScorer, ContextFragmenter, Formatter, get_text, top_fragments

from artifacts.analysis import folding_analyzer, normalize_text

MARK = "**"
SNIPPET_CHARS = 240
"""Target snippet length (characters of chunk text, marks and ellipses not counted)."""


class _MarkFormatter(Formatter):
    """Wrap each matched token in :data:`MARK`; fragments are joined by an ellipsis."""

    between = " … "

    def format_token(self, text: str, token: Any, replace: bool = False) -> str:
        return f"{MARK}{get_text(text, token, replace)}{MARK}"


def _matched(tokens: Iterable[Any], words: dict[str, float], prefixes: dict[str, float]) -> Iterator[Any]:
    """Set ``matched`` and ``boost`` (the word's weight) on each token (Whoosh reuses one token object)."""
    for token in tokens:
        weight = words.get(token.text)
        if weight is None:
            weight = next((w for p, w in prefixes.items() if token.text.startswith(p)), None)
        token.matched = weight is not None
        token.boost = weight if weight is not None else 1.0
        yield token


def make_snippet(text: str, words: dict[str, float], prefixes: dict[str, float] | None = None,
                 maxchars: int = SNIPPET_CHARS) -> str:
    """Return the best passage of ``text`` (about ``maxchars`` characters) with matched words in ``**``.

    ``words``: folded query words -> weight (e.g. idf); ``prefixes``: folded stem prefixes ->
    weight (a token starting with one matches).  Whitespace is collapsed to single spaces; ``…``
    marks text cut at either end.  Without any match, the start of ``text`` is returned.
    """
    text = normalize_text(text)
    prefixes = prefixes or {}
    if words or prefixes:
        tokens = folding_analyzer()(text, chars=True, mode="query", removestops=False)
        fragmenter = ContextFragmenter(maxchars=maxchars, surround=maxchars // 3)
        fragments = fragmenter.fragment_tokens(text, _matched(tokens, words, prefixes))
        best = top_fragments(fragments, 1, BasicFragmentScorer(), lambda f: f.startchar)
        if best:
            fragment = best[0]
            body = _MarkFormatter().format_fragment(fragment)
            head = "… " if any(ch.isalnum() for ch in text[: fragment.startchar]) else ""
            tail = " …" if any(ch.isalnum() for ch in text[fragment.endchar:]) else ""
            return head + " ".join(body.split()) + tail
    flat = " ".join(text.split())
    if len(flat) <= maxchars:
        return flat
    cut = flat.rfind(" ", 0, maxchars)
    return flat[: cut if cut > maxchars // 2 else maxchars] + " …"

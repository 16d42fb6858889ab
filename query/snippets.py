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

from collections.abc import Iterator
from typing import Any

from whoosh.analysis import Token
from whoosh.highlight import BasicFragmentScorer, ContextFragmenter, Formatter, get_text, top_fragments

from artifacts.analysis import folded_spans, normalize_text

MARK = "**"
SNIPPET_CHARS = 240
"""Target snippet length (characters of chunk text, marks and ellipses not counted)."""


class _MarkFormatter(Formatter):
    """Wrap each matched token in :data:`MARK`; fragments are joined by an ellipsis."""

    between = " … "

    def format_token(self, text: str, token: Any, replace: bool = False) -> str:
        return f"{MARK}{get_text(text, token, replace)}{MARK}"


def _matched(text: str, words: dict[str, float], prefixes: dict[str, float]) -> Iterator[Any]:
    """Yield the folding analyzer's tokens of ``text`` with ``matched`` and ``boost`` (the word's weight) set.

    One Whoosh token object is reused, as Whoosh's analyzers do (the fragmenter copies matches).
    """
    token = Token(positions=False, chars=True, removestops=False, mode="query")
    prefix_items = tuple(prefixes.items())
    for folded, start, end in folded_spans(text):
        weight = words.get(folded)
        if weight is None:
            for prefix, w in prefix_items:
                if folded.startswith(prefix):
                    weight = w
                    break
        token.text = folded
        token.startchar = start
        token.endchar = end
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
        fragmenter = ContextFragmenter(maxchars=maxchars, surround=maxchars // 3)
        fragments = fragmenter.fragment_tokens(text, _matched(text, words, prefixes))
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

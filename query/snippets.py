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

Snippets show the words a reader sees, not Markdown syntax (:func:`display_text`): link and
image destinations, ``[[wikilink]]`` brackets, HTML tags, emphasis and code markers, heading, quote
and list markers, table pipes and the backslash of escapes are dropped.  This is a set of regular
expressions, not a parse (a markdown-it parse costs ~1.6 ms per chunk here, ten times a whole BM25 query at the target).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from whoosh.analysis import Token
from whoosh.highlight import BasicFragmentScorer, ContextFragmenter, Formatter, get_text, top_fragments

from artifacts.analysis import folded_spans, normalize_text

from .sentences import stop_words

MARK = "**"
SNIPPET_CHARS = 240
"""Target snippet length (characters of chunk text, marks and ellipses not counted)."""


_DISPLAY_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"!?\[\[([^\]|#]*)(?:#([^\]|]*))?(?:\|([^\]]*))?\]\]"),
     "WIKI"),                                                        # [[Page#Heading|Alias]]
    (re.compile(r"!\[([^\]]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)"), r"\1"),        # ![alt](src "title")
    (re.compile(r"\[([^\]]+)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)"), r"\1"),  # [text](url)
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),                             # [text][ref]
    (re.compile(r"<((?:https?|mailto):[^>\s]+)>"), r"\1"),                          # <https://autolink>
    (re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>"), " "),                      # HTML tags (<iframe ...>)
    (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), r"\1"),                                # **bold**
    (re.compile(r"(?<![\w_])__(?=\S)(.+?)(?<=\S)__(?![\w_])"), r"\1"),                  # __bold__ (not in a word)
    (re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"), r"\1"),              # *emphasis*
    (re.compile(r"(?<![\w_])_(?=[^\s_])([^\n]*?[^\s_])_(?![\w_])"), r"\1"),              # _emphasis_ (not snake_case)
    (re.compile(r"^([ \t]*)(?:\*{1,3}|_{1,3})(?=[^\s*_])", re.MULTILINE), r"\1"),          # emphasis opener cut open
    (re.compile(r"(?<=[^\s*_\\])(?:\*{1,3}|_{1,3})[ \t]*$", re.MULTILINE), ""),          # ... or its closer
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1"),                                    # ~~strike~~
    (re.compile(r"==(?=\S)(.+?)(?<=\S)=="), r"\1"),                                    # ==highlight==
    (re.compile(r"`+([^`\n]+?)`+"), r"\1"),                                          # `code`
    (re.compile(r"^[ \t]{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$", re.MULTILINE), ""),        # thematic break (- - -)
    (re.compile(r"[ \t]*\\$", re.MULTILINE), ""),                                       # hard line break (\ at the end)
    (re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?[^\s.:?!…])[ \t]*#*[ \t]*$", re.MULTILINE),
     r"\1 —"),                                                                        # heading, set off from its text
    (re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+(?:\[[ xX]\][ \t]+)?|\d{1,9}[.)][ \t]+)",
                re.MULTILINE), ""),                                                  # heading, quote, list markers
    (re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$", re.MULTILINE),
     ""),                                                                             # table rule
    (re.compile(r"[ \t]*\|[ \t]*"), " "),                                              # table pipes
)


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
"""A CommonMark backslash escape: ``\\`` before any ASCII punctuation character."""
_PRIVATE = 0xE000
"""Escaped characters are held as private-use code points (U+E021..U+E07E) while the rules run, so
that ``\\*`` is never emphasis, ``\\#`` never a heading, ``\\|`` never a table pipe."""
_UNESCAPE = {_PRIVATE + code: code for code in range(0x21, 0x7F)}


def _hold_escaped(match: re.Match[str]) -> str:
    return chr(_PRIVATE + ord(match.group(1)))


def _wikilink_text(match: re.Match[str]) -> str:
    target, heading, alias = match.group(1), match.group(2), match.group(3)
    if alias:
        return alias
    name = target.rsplit("/", 1)[-1].strip()
    return f"{name} › {heading.strip()}" if heading and name else (heading or name).strip()


def display_text(text: str, *, tables: bool = True) -> str:
    """Return ``text`` (Markdown) as the words a reader sees: link texts without destinations, no
    HTML tags, emphasis, code, heading, quote, list or table markup.  Backslash escapes show their
    character (``Ty\\*ti`` -> ``Ty*ti``); ``_emphasis_`` and ``__bold__`` lose their markers but
    ``snake_case`` keeps its underscores; an emphasis marker left open at a line's start or end (a
    chunk cut inside ``_..._``) is dropped.  Line structure is kept; callers collapse
    whitespace.  ``[[Page|Alias]]`` shows ``Alias``, ``[[folder/Page]]`` shows ``Page``,
    ``[[Page#Part]]`` shows ``Page › Part``.  ``tables=False`` keeps ``|`` (a title such as
    ``"News | Jobs | Events"`` is no table).
    """
    text = _ESCAPED.sub(_hold_escaped, text)
    for pattern, replacement in _DISPLAY_RULES if tables else _DISPLAY_RULES[:-2]:
        text = pattern.sub(_wikilink_text if replacement == "WIKI" else replacement, text)
    return text.translate(_UNESCAPE)


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

    ``words``: folded query words -> weight (e.g. idf); stop words (sk, cs, en, de, pl) among them
    are not marked when another word is; ``prefixes``: folded stem prefixes -> weight (a token
    starting with one matches).  Whitespace is collapsed to single spaces; ``…``
    marks text cut at either end.  Without any match, the start of ``text`` is returned.
    """
    text = display_text(normalize_text(text))
    prefixes = prefixes or {}
    content = {w: weight for w, weight in words.items() if w not in stop_words()}
    if content:  # function words ("pro", "the", "v") are not marked unless the query has nothing else
        words = content
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


NEAR_DUPLICATE = 0.6
"""Share of the shorter snippet's word pairs found in the other above which two snippets are one passage."""
_WORD = re.compile(r"\w+")


def _word_pairs(snippet: str) -> set[tuple[str, str]]:
    words = _WORD.findall(snippet.replace(MARK, "").casefold())
    return set(zip(words, words[1:], strict=False)) if len(words) > 1 else {(w, "") for w in words}


def near_duplicate(first: str, second: str, threshold: float = NEAR_DUPLICATE) -> bool:
    """True when two snippets show (nearly) the same passage: overlapping chunks of one section cut
    around the same matches.

    Measured on consecutive word pairs (case-folded, marks and punctuation ignored): the share of
    the shorter snippet's pairs that occur in the other is at least ``threshold`` (0..1).  Empty
    snippets are duplicates of each other only.
    """
    a, b = _word_pairs(first), _word_pairs(second)
    if not a or not b:
        return not a and not b
    return len(a & b) / min(len(a), len(b)) >= threshold

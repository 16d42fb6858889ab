"""Result snippets: the best-matching passage of a chunk, matched words marked.

The chunk text is tokenised as the index's folding analyzer does (:func:`artifacts.analysis.folded_spans`,
so ``prace`` marks ``práce``); tokens are matched against the query's words and stem prefixes (the
same forms BM25 searches, so ``sítě`` marks ``sítích``); passages are cut around matches by Whoosh's
context-fragmenter rule (:class:`whoosh.highlight.ContextFragmenter`: from up to ``maxchars // 3``
characters before a match to as many after the last one, at most ``maxchars`` characters of
tokens), and the passage with the highest score (sum of the matched words' weights times the
number of distinct words, Whoosh's ``BasicFragmentScorer``; on a tie the later passage) is returned.
The rule is Whoosh's, run in one pass over ``(start, end)`` pairs instead of Whoosh token objects
and generators (a third of a search's time on a 50k-chunk vault); ``tests/query/test_snippets.py``
checks it gives Whoosh's passages.  Weights are the words' idf, so a passage with the rare words of
a query beats one full of function words; words that occur in most chunks are not marked at all.

A chunk found only by the vector arm may contain no query word.  Its snippet is then the passage
with the most *related* words: words that are a query word up to inflection, derivation or a
Slovak/Czech cognate by the rule the answer checker uses (:func:`artifacts.text.words.words_match`:
``krizový`` relates ``krizovou`` and ``krize``), scored and cut by the same passage rule and marked
the same way; only when no word of the chunk relates to the query is the snippet the chunk start.
This costs one tokenisation of the chunk and no model call (the search result's ``match`` field
says which retrieval arm found the chunk, see :func:`query.search.response.search`).
Marks are ``**word**`` (Markdown bold), which is plain text in JSON and safe to show anywhere.

Snippets show the words a reader sees, not Markdown syntax (:func:`display_text`): link and
image destinations, ``[[wikilink]]`` brackets, HTML tags, emphasis and code markers, heading, quote
and list markers, table pipes and the backslash of escapes are dropped.  This is a set of regular
expressions, not a parse (a markdown-it parse costs ~1.6 ms per chunk here, ten times a whole BM25
query at the target); each runs only when the text holds a string it needs to match.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
from collections.abc import Callable
from typing import Any

from artifacts.analysis import fold_aligned, folded_spans, normalize_text, token_spans
from artifacts.text.words import cognate_key, stop_words, words_match

MARK = "**"
SNIPPET_CHARS = 240
"""Target snippet length (characters of chunk text, marks and ellipses not counted)."""


_DISPLAY_RULES: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = (
    # (pattern, replacement, strings one of which a match contains: the rule is skipped without them)
    (re.compile(r"^[ \t]{0,3}:{3,}[^\n]*$", re.MULTILINE), "", (":::",)),       # container fence (:::warning)
    (re.compile(r"\{\{[<%][^\n]*?[%>]\}\}"), "", ("{{",)),                       # Hugo shortcode {{< figure >}}
    (re.compile(r"^([ \t]{0,3}>[ \t]?)\[![A-Za-z]+\][ \t]*$", re.MULTILINE), r"\1", ("[!",)),  # > [!TIP]
    (re.compile(r"^([ \t]{0,3}#{1,6}[ \t].*?)[ \t]*\{[#.][^{}\n]*\}[ \t]*$", re.MULTILINE), r"\1",
     ("{#", "{."),),                                                             # heading id: ## Move {#move}
    (re.compile(r"!?\[\[([^\]|#]*)(?:#([^\]|]*))?(?:\|([^\]]*))?\]\]"),
     "WIKI", ("[[",)),                                               # [[Page#Heading|Alias]]
    (re.compile(r"!\[([^\]]*)\]\([^)\s]*(?:\s+\"[^\"]*\")?\)"), r"\1", ("![",)),  # ![alt](src "title")
    (re.compile(r"\[([^\]]+)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)"), r"\1", ("](",)),  # [text](url)
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1", ("][",)),                    # [text][ref]
    (re.compile(r"\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+\"[^\"]*\")?\)"), "", ("](",)),  # a link's tail, its [ cut off
    (re.compile(r"\[([^\]\n]+)\]\([^)\s]*\Z"), r"\1", ("](",)),                 # a link cut inside its URL
    (re.compile("[\u200b\u200c\u200d\u2060\ufeff]"), "",
     ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff")),                   # zero-width characters
    (re.compile(r"<((?:https?|mailto):[^>\s]+)>"), r"\1", ("<",)),                # <https://autolink>
    (re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>"), " ", ("<",)),       # HTML tags (<iframe ...>)
    (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), r"\1", ("**",)),                     # **bold**
    (re.compile(r"(?<![\w_])__(?=\S)(.+?)(?<=\S)__(?![\w_])"), r"\1", ("__",)),       # __bold__ (not in a word)
    (re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"), r"\1", ("*",)),   # *emphasis*
    (re.compile(r"(?<![\w_])_(?=[^\s_])([^\n]*?[^\s_])_(?![\w_])"), r"\1", ("_",)),   # _emphasis_ (not snake_case)
    (re.compile(r"^([ \t]*)(?:\*{1,3}|_{1,3})(?=[^\s*_])", re.MULTILINE), r"\1",
     ("*", "_")),                                                                # emphasis opener cut open
    (re.compile(r"(?<=[^\s*_\\])(?:\*{1,3}|_{1,3})[ \t]*$", re.MULTILINE), "",
     ("*", "_")),                                                                # ... or its closer
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), r"\1", ("~~",)),                     # ~~strike~~
    (re.compile(r"==(?=\S)(.+?)(?<=\S)=="), r"\1", ("==",)),                     # ==highlight==
    (re.compile(r"`+([^`\n]+?)`+"), r"\1", ("`",)),                              # `code`
    (re.compile(r"^[ \t]{0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$", re.MULTILINE), "",
     ("-", "*", "_")),                                                           # thematic break (- - -)
    (re.compile(r"[ \t]*\\$", re.MULTILINE), "", ("\\",)),                       # hard line break (\ at the end)
    (re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?[^\s.:?!…])[ \t]*#*[ \t]*$", re.MULTILINE),
     r"\1 —", ("#",)),                                                           # heading, set off from its text
    (re.compile(r"^[ \t]{0,3}(?:#{1,6}[ \t]+|>[ \t]?|[-*+][ \t]+(?:\[[ xX]\][ \t]+)?|\d{1,9}[.)][ \t]+)",
                re.MULTILINE), "", ()),                                          # heading, quote, list markers
    (re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$", re.MULTILINE),
     "", ("---",)),                                                              # table rule
    (re.compile(r"[ \t]*\|[ \t]*"), " ", ("|",)),                                # table pipes
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
    if "\\" in text:
        text = _ESCAPED.sub(_hold_escaped, text)
    for pattern, replacement, needs in _DISPLAY_RULES if tables else _DISPLAY_RULES[:-2]:
        for need in needs:
            if need in text:
                break
        else:
            if needs:
                continue  # cannot match: a scan for a string is ~20x cheaper than a regex pass
        text = pattern.sub(_REPLACE.get(replacement, replacement), text)
    return text.translate(_UNESCAPE)


_REPLACE: dict[str, Any] = {"WIKI": _wikilink_text, r"\1": operator.methodcaller("group", 1),
                            r"\2": operator.methodcaller("group", 2)}
"""Replacements as callables: Python 3.11 expands a template such as ``\\1`` in Python code per match."""


_CHARLIMIT = 2**15
"""Tokens ending beyond this character are not looked at (Whoosh's ``DEFAULT_CHARLIMIT``)."""

_Match = tuple[int, int, str, float]
"""A matched token: ``(start, end, folded text, weight)`` (character offsets, end exclusive)."""


_TOKEN_REST = re.compile(r"\w*(?:[.'’]\w+)*")
"""The rest of a token after its first characters (word characters, joined by ``.``, ``'`` or ``’``)."""


def _token_runs(folded_text: str, starts: tuple[str, ...]) -> list[tuple[int, int]]:
    r"""Return ``(start, end)`` of the tokens of ``folded_text`` that start with one of ``starts`` (each a
    folded token or a prefix of one: it begins and ends with a word character), left to right.

    The matches of ``re.finditer(rf"(?:{'|'.join(starts longest first)})\w*(?:[.'’]\w+)*")`` that start
    a token, found without compiling a pattern per query (a compile cost about 1 ms, a tenth of a
    search): each start is found by ``str.find`` (a C scan) and kept only where a token starts (after
    a character that is no word character and no joiner following one: Whoosh's tokeniser joins
    "x.y" into one token, as ``TOKEN_PATTERN`` does), the longest start at a position wins as the
    alternation's first alternative would, and the run goes on to the end of the token.  Dropping
    the pattern's matches inside a token changes nothing else: such a match ends where its token
    ends, so it never covers the start of another token.
    """
    at: dict[int, int] = {}  # token start -> length of the longest start found there
    find = folded_text.find
    for word in starts:
        if not word:
            continue
        size = len(word)
        i = find(word)
        while i >= 0:
            if i:  # a word character (str.isalnum or "_", as re's \w) or a joiner after one: inside a token
                before = folded_text[i - 1]
                inside = before.isalnum() or before == "_" or (
                    before in _JOINERS and i > 1 and (folded_text[i - 2].isalnum() or folded_text[i - 2] == "_"))
            else:
                inside = False
            if not inside and at.get(i, 0) < size:
                at[i] = size
            i = find(word, i + 1)
    runs: list[tuple[int, int]] = []
    rest = _TOKEN_REST.match
    end = 0
    for i in sorted(at):
        if i < end:
            continue
        tail = rest(folded_text, i + at[i])
        end = tail.end() if tail is not None else i + at[i]
        runs.append((i, end))
    return runs


_JOINERS = ".'’"


def _matched_tokens(text: str, words: dict[str, float], prefixes: dict[str, float]) -> list[_Match]:
    """Return the tokens of ``text`` that match (folded text in ``words`` or starting with a prefix), in order.

    With an aligned fold (:func:`artifacts.analysis.fold_aligned`) one scan of the folded text per
    word finds them (:func:`_token_runs`); otherwise every token is folded and looked up.
    """
    prefix_items = tuple(prefixes.items())

    def judge(folded: str) -> tuple[str, float] | None:
        found = words.get(folded)
        if found is None:
            for prefix, w in prefix_items:
                if folded.startswith(prefix):
                    return folded, w
            return None
        return folded, found

    return _scan_tokens(text, tuple(words) + tuple(prefixes), judge)


def _scan_tokens(text: str, starts: tuple[str, ...],
                 judge: Callable[[str], tuple[str, float] | None]) -> list[_Match]:
    """Return ``(start, end, word, weight)`` of the tokens of ``text`` that ``judge`` accepts, in order.

    ``judge(folded token)`` gives ``(word, weight)`` or ``None``; only tokens whose folded text
    starts with one of ``starts`` are judged (found by :func:`_token_runs` in the aligned
    fold of ``text``; without one every token is folded and judged, so ``starts`` must cover every
    token ``judge`` accepts).
    """
    folded_text = fold_aligned(text)
    if folded_text is None:
        return [(start, end, *hit) for folded, start, end in folded_spans(text) if (hit := judge(folded)) is not None]
    found: list[_Match] = []
    for start, end in _token_runs(folded_text, starts):
        hit = judge(folded_text[start:end])
        if hit is not None:
            found.append((start, end, *hit))
    return found


def best_passage(text: str, words: dict[str, float], prefixes: dict[str, float],
                 maxchars: int = SNIPPET_CHARS) -> tuple[int, int, list[_Match]] | None:
    """Return the best passage of ``text`` as ``(start, end, matched tokens)``, or ``None`` without a match.

    Passages are Whoosh's :class:`~whoosh.highlight.ContextFragmenter` fragments (``maxchars``
    characters of tokens, ``maxchars // 3`` of context on each side), scored as its
    ``BasicFragmentScorer`` does: the sum of the matched tokens' weights times 100 times the number of
    distinct matched words; the highest score wins, the later passage on a tie (``heapq.nlargest``
    over ``(score, fragment)`` pairs, fragments ordered by start), and a passage scoring below 1
    is none.  ``start``/``end``: character offsets (end exclusive); a token matches when its folded
    text is in ``words`` or starts with one of ``prefixes`` (weight: the word's, else the first such
    prefix's).  Cost: one pass to find the matches, then only the tokens of the passages and of
    the context before each.
    """
    if not words and not prefixes:
        return None
    return _passage_of(text, _matched_tokens(text, words, prefixes), maxchars)


def related_tokens(text: str, words: dict[str, float]) -> list[_Match]:
    """Return the tokens of ``text`` related to a query word, in order, as ``(start, end, word, weight)``.

    Related: :func:`artifacts.text.words.words_match` of the token's folded form and the folded query
    word (inflection, derivation, Slovak/Czech cognates; words shorter than 4 letters only match
    exactly; function words never relate).  ``word`` is the query word matched (so two forms of
    one word count once when a passage is scored), ``weight`` its weight in ``words``.
    """
    stops = stop_words()
    query = [(w, weight) for w, weight in words.items() if w.isalpha() and len(w) >= 4 and w not in stops]
    if not query:
        return []
    # words_match needs the first 3 letters shared, directly or after cognate_key (a prefix of at least 4
    # letters of the words or of their keys): only tokens starting so are judged.  cognate_key shortens
    # "ie" to "i" and "ou" to "u", so a token whose key starts with "mis" may start with "mies".
    starts: set[str] = set()
    for w, _ in query:
        for key in {w[:3], cognate_key(w)[:3]}:
            starts.update(map("".join, itertools.product(*(_COGNATE_SPELLINGS.get(c, (c,)) for c in key))))
    seen: dict[str, tuple[str, float] | None] = {}

    def judge(folded: str) -> tuple[str, float] | None:
        if folded not in seen:
            seen[folded] = next(((w, weight) for w, weight in query if words_match(w, folded)), None)
        return seen[folded]

    return _scan_tokens(text, tuple(sorted(starts)), judge)


_COGNATE_SPELLINGS = {"i": ("i", "ie"), "u": ("u", "ou")}
"""Spellings :func:`artifacts.text.words.cognate_key` merges into one letter."""


def _passage_of(text: str, found: list[_Match], maxchars: int) -> tuple[int, int, list[_Match]] | None:
    """The best passage of ``text`` around the matched tokens ``found`` (see :func:`best_passage`)."""
    if not found:
        return None
    spans = token_spans(text)
    last_end = spans[-1][1]
    if last_end > _CHARLIMIT:  # Whoosh stops at the first token ending past the limit (and ends there)
        cut = next(k for k, (_, e) in enumerate(spans) if e > _CHARLIMIT)
        last_end = spans[cut][1]
        spans = spans[:cut]
        found = [m for m in found if m[1] <= _CHARLIMIT]
    surround = maxchars // 3
    best: tuple[float, int, int, list[_Match]] | None = None

    def consider(first: int | None, end: int, matches: list[_Match]) -> None:
        nonlocal best
        score = sum(m[3] for m in matches) * (len({m[2] for m in matches}) * 100 or 1)
        start = first if first is not None else (matches[0][0] if matches else 0)
        # heapq.nlargest(1, (score, fragment)): a later fragment wins a tie (Fragment.__lt__ compares starts)
        if best is None or score > best[0] or (score == best[0] and best[1] < start):
            best = (score, start, end, matches)

    n, f, done = len(spans), 0, -1  # done: the last token of the last passage (the context starts after it)
    while f < len(found):
        k = bisect.bisect_left(spans, (found[f][0],))  # the next match opens a passage
        # Its context (Whoosh's deque of starts): the tokens since the last passage starting at most
        # `surround` characters before the end of the token just before the match.
        context = None
        if k - 1 > done:
            edge, j = spans[k - 1][1], k - 1
            while j > done and edge - spans[j][0] <= surround:
                j -= 1
            if j < k - 1:
                context = spans[j + 1][0]
        first: int | None = None
        countdown, currentlen, matches = -1, 0, []
        for t in range(k, n):
            start, end = spans[t]
            tlength = end - start
            is_match = f < len(found) and found[f][0] == start
            if currentlen + tlength > maxchars:
                countdown = 0  # the passage is full: emitted below
            elif is_match:
                countdown = surround
                if first is None:
                    if context is not None:
                        first = context
                    else:
                        first = start
                        countdown += surround  # no context used before: more after
                matches.append(found[f])
            if is_match:
                f += 1
            currentlen += tlength
            countdown -= tlength
            if countdown <= 0:
                consider(first, end, matches)
                done = t
                if countdown == 0 and t + 1 < n and not (f < len(found) and found[f][0] == spans[t + 1][0]):
                    # Whoosh keeps a countdown of exactly 0 after a passage: the next token, unless it is
                    # a match, is taken into an empty passage (score 0) and is no context for the next one.
                    done = t + 1
                break
        else:  # the text ended inside a passage
            if matches:
                consider(first, last_end, matches)
            break
    if best is None or best[0] < 1:
        return None
    return best[1], best[2], best[3]


def mark_passage(text: str, start: int, end: int, matches: list[_Match]) -> str:
    """Return ``text[start:end]`` with each matched token wrapped in :data:`MARK` (an overlapped one is skipped)."""
    out: list[str] = []
    index = start
    for m_start, m_end, _, _ in sorted(matches, key=lambda m: (m[0], m[0] - m[1])):
        if m_start < index:
            continue
        out.append(text[index:m_start])
        out.append(f"{MARK}{text[m_start:m_end]}{MARK}")
        index = m_end
    out.append(text[index:end])
    return "".join(out)


def make_snippet(text: str, words: dict[str, float], prefixes: dict[str, float] | None = None,
                 maxchars: int = SNIPPET_CHARS) -> str:
    """Return the best passage of ``text`` (about ``maxchars`` characters) with matched words in ``**``.

    ``words``: folded query words -> weight (idf as :func:`query.search.response.snippet_terms` gives it); stop
    words (sk, cs, en, de, pl) among them are marked only when no other query word, nor a form related
    to one, is in ``text`` (a rare stop word is no topic either: an English query over Czech pages
    finds "for" in "Code for Romania"); ``prefixes``: folded stem prefixes -> weight (a token
    starting with one matches).  Whitespace is collapsed to single spaces; ``…``
    marks text cut at either end.  Without any match, the passage with the most words related to
    a query word (:func:`related_tokens`) is returned, those words marked; without any, the start
    of ``text``.
    """
    text = display_text(normalize_text(text))
    prefixes = prefixes or {}
    stops = stop_words()
    content = {w: weight for w, weight in words.items() if w not in stops} or words
    # function words ("pro", "the", "for", "v") are marked only when nothing else of the query is in the
    # text: an English query over Czech pages matches "for" in "Code for Romania", which is no topic
    passage = best_passage(text, content, prefixes, maxchars)
    if passage is None:  # no query word: the passage with the most related words, if any
        passage = _passage_of(text, related_tokens(text, content), maxchars)
    if passage is None and content is not words:  # only function words matched: they are why it was found
        passage = best_passage(text, words, prefixes, maxchars)
    if passage is not None:
        start, end, matches = passage
        body = mark_passage(text, start, end, matches)
        head = "… " if any(ch.isalnum() for ch in text[:start]) else ""
        tail = " …" if any(ch.isalnum() for ch in text[end:]) else ""
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

"""Question analysis: entities, intent words and values of a question, against a bundle's
:class:`~query.graph.index.GraphIndex` (the order is in the :mod:`query.graph` docstring)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from artifacts.analysis import fold
from query.graph.analysis import Analysis
from query.graph.index import GraphIndex, Named
from query.graph.intents import intent_of
from query.graph.names import (
    Token,
    capital_runs,
    find_years,
    name_forms,
    tokenize,
)
from query.graph.values import Value, combinations, negations, operator_spans
from query.graph.words import Vocabulary

_WORD_RE = re.compile(r"\w+(?:[-’']\w+)*")

def _boundaries(question: str, tokens: list[Token]) -> tuple[set[int], set[int]]:
    """``(sentence starts, words preceded by punctuation)``, as token positions."""
    starts, punctuated = {0}, {0}
    text = unicodedata.normalize("NFC", question)
    words = list(_WORD_RE.finditer(text))
    for i in range(1, len(words)):
        between = text[words[i - 1].end() : words[i].start()]
        if any(c in between for c in ".?!:;"):
            starts.add(i)
        if between.strip():
            punctuated.add(i)
    positions = {t.index for t in tokens}
    return starts & positions, punctuated & positions


_QUOTED = re.compile(r"[„“”\"«»‚‘]([^„“”\"«»]+)[“”\"»«‘’]")


def _quoted(question: str) -> list[tuple[int, int]]:
    """Token ranges ``(first, end exclusive)`` of the quoted parts of ``question`` („…“, "…", «…»)."""
    text = unicodedata.normalize("NFC", question)
    starts = [m.start() for m in _WORD_RE.finditer(text)]
    ranges = []
    for match in _QUOTED.finditer(text):
        inside = [i for i, at in enumerate(starts) if match.start(1) <= at < match.end(1)]
        if inside:
            ranges.append((inside[0], inside[-1] + 1))
    return ranges


def strip_invisible(text: str) -> str:
    """``text`` without format and control characters other than whitespace (zero-width spaces,
    joiners, BOMs, direction marks, NUL): "Já\u200bn Holp" is "Ján Holp" to recognition."""
    return "".join(ch for ch in text if ch.isspace() or unicodedata.category(ch) not in ("Cf", "Cc"))


PARTIAL_TITLE_WORDS = 3
"""Least number of a title's first words (and :data:`PARTIAL_TITLE_CHARS` letters) that name the page
when a question gives only the beginning of a long title ("Kdo napsal příručku Spolu na dálku?")."""
PARTIAL_TITLE_CHARS = 12


def _fits(token: Token, word: str, vocab: Vocabulary, cases: frozenset[str] = frozenset()) -> bool:
    """Whether a question word is ``word`` of a title: the same folded word, or an inflected form of it
    (a lemma of the question word: "příručku" fits "Příručka"; or, for a capitalised word, one of the name
    case forms ``cases`` of the title word: "Novákovej" fits "Nováková")."""
    return token.folded == word or word in vocab.forms(token) or (token.capital and token.folded in cases)


@lru_cache(maxsize=4096)
def _title_cases(label: str, words: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    """Folded name case forms of each word of a title (:func:`query.graph.names.name_forms`), when the
    label's words are the title's words; else no forms."""
    written = re.findall(r"[^\W\d_]+|\d+", label)
    if tuple(fold(w) for w in written) != words:
        return tuple(frozenset() for _ in words)
    return tuple(frozenset(fold(f) for f in name_forms(w)) for w in written)


def _find_named(
    tokens: list[Token], free: set[int], named: list[Named], vocab: Vocabulary, ends: set[int] | None = None
) -> tuple[Named, int, int] | list[Named] | None:
    """The longest title/topic whose words appear consecutively on free positions (each word as
    written or inflected), as ``(item, start position, words matched)``.

    ``ends`` (titles only): positions where a partial title may end (the end of the question, a word
    after punctuation).  With no whole title in the question, a title of which at least
    :data:`PARTIAL_TITLE_WORDS` first words end there names the page when it is the only one; several
    such titles are returned as a list (the question is ambiguous).
    """
    firsts = {w for p in free for w in (tokens[p].folded, *vocab.forms(tokens[p]))}
    capitals = {tokens[p].folded for p in free if tokens[p].capital}
    partial: dict[str, tuple[Named, int, int]] = {}
    for item in named:
        if not item.words or (item.words[0] not in firsts and not (
                capitals and capitals & _title_cases(item.label, tuple(item.words))[0])):
            continue
        n = len(item.words)
        cases = _title_cases(item.label, tuple(item.words))
        for start in sorted(free):
            k = 0
            while k < n and start + k in free and _fits(tokens[start + k], item.words[k], vocab, cases[k]):
                k += 1
            if k == n:
                return item, start, n
            if (ends is not None and k >= PARTIAL_TITLE_WORDS and start + k in ends
                    and len("".join(item.words[:k])) >= PARTIAL_TITLE_CHARS):
                key = item.path or item.ref
                if key not in partial or partial[key][2] < k:
                    partial[key] = (item, start, k)
    if not partial:
        return None
    best = max(k for _, _, k in partial.values())
    chosen = [hit for hit in partial.values() if hit[2] == best]
    return chosen[0] if len(chosen) == 1 else [item for item, _, _ in chosen]


def _category_values(a: Analysis, index: GraphIndex) -> set[int]:
    """Read front matter category values written in the question ("dr2018", "st2014") with the
    mapping's own patterns: a work category gives a work type and a year, a start-year category a
    year and a start.  Returns their positions (explained words); sets ``a.category_types``,
    ``a.category_start`` and adds the years to ``a.years``."""
    mapping = index.mapping
    work = re.compile(mapping.works.category) if mapping.works else None
    start = re.compile(mapping.person_pages.start_year_category) \
        if mapping.person_pages and mapping.person_pages.start_year_category else None
    found: set[int] = set()
    for token in a.tokens:
        value = token.lower
        if work is not None and (m := work.fullmatch(value)) and m.group("type") in index.work_types:
            a.category_types.append(m.group("type"))
            year = int(m.group("year"))
        elif start is not None and (m := start.fullmatch(value)):
            a.category_start = True
            year = int(m.group("year"))
        else:
            continue
        found.add(token.index)
        a.values.append(Value("category", (a.category_types[-1] if m.re is work else "start", year),
                              token.index, token.index + 1))
        if year not in a.years:
            a.years.append(year)
    return found


def analyse(question: str, index: GraphIndex, published_only: bool) -> Analysis:
    """Recognise entities, intent words and the intent of ``question`` (see the module docstring)."""
    vocab = index.vocabulary
    known = index.by_published[published_only]
    question = strip_invisible(question)
    tokens = tokenize(question, vocab.possessive_suffixes)
    a = Analysis(tokens=tokens, years=find_years(tokens))
    starts, punctuated = _boundaries(question, tokens)
    a.quoted = _quoted(question)
    free = {t.index for t in tokens}
    free -= _category_values(a, index)

    a.persons = known.names.match(tokens)
    free -= {p for m in a.persons for p in m.positions}
    a.document_authors = known.authors.match(tokens, skip=set(range(len(tokens))) - free)
    free -= {p for m in a.document_authors for p in m.positions}

    def concepts() -> None:
        a.concepts = {name: vocab.find(tokens, entries, free) for name, entries in vocab.concepts.items()}

    concepts()
    # intents the mapping declares (artifacts.graphmap.Intent) whose words the question has: their
    # slots name a page or a value of a front matter relation
    declared = [i for i in index.mapping.intents.values() if all(a.has(w) for w in i.words)]
    named_run = any(sum(1 for t in run if t.index in free and t.index not in starts) >= 2
                    for run in capital_runs(tokens, set()))
    if a.has("link", "author", "document") or (a.has("who") and not a.persons) \
            or any("page" in i.slots.values() for i in declared) or named_run:
        # a page is looked up where the question asks about pages, or names something as a name is written
        # (two capitalised words: "Aký je názov práce Evy Novákovej?" names the page "Eva Nováková"); only
        # a whole title counts then
        asked = a.has("link", "author", "document") or (a.has("who") and not a.persons) \
            or any("page" in i.slots.values() for i in declared)
        ends = ({len(tokens)} | punctuated) if asked else None
        found = _find_named(tokens, free, known.titles, vocab, ends)
        if isinstance(found, list):
            a.ambiguous_pages = found
        elif found is not None and any(q[0] == found[1] and q[1] != found[1] + found[2] for q in a.quoted):
            pass  # a quoted title of which only the beginning is some page's whole title: no such page
        elif found is not None:
            page, start, length = found
            a.pages = [page]
            a.page_span = (start, start + length)
            free -= set(range(*a.page_span))
            a.years = find_years([t for t in tokens if t.index in free])  # a year of the title is no slot
            concepts()
    if a.has("tag", "topic"):
        tag_words = {p for c in ("tag", "topic") for s, e, _ in a.concepts[c] for p in range(s, e)}
        # "téma"/"topic" asks for the Topic relation (named by its id or its page's title), a tag
        # word for tags; a tag is a whole word of the question (or a case form of the tag), never
        # the lemma of a word ("reči" is not the tag "rec")
        if a.has("topic"):
            found = _find_named(tokens, free - tag_words, known.topics, vocab)
            if isinstance(found, tuple):
                a.topics = [found[0]]
                free -= set(range(found[1], found[1] + found[2]))
        if a.has("tag"):
            for pos in sorted(free - tag_words):
                tag = known.tags.get(tokens[pos].folded)
                if tag is not None:
                    a.values.append(Value("tag", tag, pos, pos + 1))
                    if tag not in a.tags:
                        a.tags.append(tag)
                    free.discard(pos)
        concepts()
    for relation in dict.fromkeys(r for i in declared for r in i.relations()):
        value = _find_named(tokens, free, known.field_values.get(relation, []), vocab)
        if isinstance(value, tuple):
            a.field_values[relation] = [value[0].label]
            free -= set(range(value[1], value[1] + value[2]))
    if a.field_values:
        concepts()
    a.work_types, per_type = vocab.work_type_spans(tokens, free)
    type_positions = {p for positions in per_type.values() for p in positions}
    a.values += [Value("work_type", t, min(ps), max(ps) + 1) for t, ps in per_type.items()]
    a.work_types += [t for t in dict.fromkeys(a.category_types) if t not in a.work_types]
    vocab_positions = type_positions | {p for hits in a.concepts.values() for s, e, _ in hits for p in range(s, e)}

    # surnames alone (also written in lower case) and names nobody has
    for token in tokens:
        pos = token.index
        if pos not in free or pos in vocab_positions or vocab.is_stopword(token) or len(token.folded) < 3:
            continue
        if token.capital and pos in starts:
            continue
        if not token.capital and len(token.folded) < 4:
            continue
        neighbours = [n for n in (pos - 1, pos + 1) if 0 <= n < len(tokens)
                      and max(n, pos) not in punctuated and not (n in starts and n < pos)]
        if any(n in free and n not in vocab_positions and not vocab.is_stopword(tokens[n])
               and (tokens[n].capital or not token.capital) for n in neighbours):
            continue  # next to another unknown word: part of a name nobody has ("Peter Lukáč")
        surname = known.names.match_surname(token)
        if surname is not None:
            a.persons.append(surname)
            free.discard(pos)
        elif token.capital and (author := known.authors.match_surname(token)) is not None:
            a.document_authors.append(author)
            free.discard(pos)
    a.persons.sort(key=lambda m: m.positions)
    for run in capital_runs(tokens, ignore=set()):
        run = [t for t in run if t.index in free and t.index not in vocab_positions and not vocab.is_stopword(t)]
        if len(run) == 1 and run[0].index in starts:
            continue
        if run:
            a.unmatched_names.append(run)
            free -= {t.index for t in run}

    a.language = _language(a, vocab)
    _values_and_operators(a, vocab, free)
    free -= {p for s, e, _ in a.operators for p in range(s, e)}
    # every word left must be a stop word or a filler word
    # a year is a slot the intent must use (see _years_explained); any other number is unexplained
    a.unexplained = [tokens[p].text for p in sorted(free - vocab_positions)
                     if not vocab.is_stopword(tokens[p]) and not (tokens[p].text.isdigit()
                                                                  and int(tokens[p].text) in a.years)]
    a.intent = intent_of(a, index)
    return a


def _language(a: Analysis, vocab: Vocabulary) -> str | None:
    """The language whose question words matched most (function and filler words only decide a tie of none)."""
    counts: dict[str, int] = {}
    # function and filler words ("was", "in", "die") are shared across languages: they only decide
    # the language when no other question word does
    for name, hits in sorted(a.concepts.items(), key=lambda item: item[0] == "filler"):
        if name == "filler" and counts:
            break
        for _, _, lang in hits:
            counts[lang] = counts.get(lang, 0) + 1
    if not counts:
        return None
    return max(vocab.languages, key=lambda lang: (counts.get(lang, 0), -vocab.languages.index(lang)))


def _values_and_operators(a: Analysis, vocab: Vocabulary, free: set[int]) -> None:
    """Add person, author and year values to ``a.values``; read the operators between values of one
    kind (:mod:`query.graph.values`) and the negation words of the question."""
    tokens = a.tokens
    for kind, matches in (("person", a.persons), ("author", a.document_authors)):
        for m in matches:
            ref = tuple(sorted(e.ref for e in m.entries))
            a.values.append(Value(kind, ref, min(m.positions), max(m.positions) + 1))
    category_positions = {v.start for v in a.values if v.kind == "category"}
    page = set(range(*a.page_span)) if a.page_span else set()
    for t in tokens:
        if t.text.isdigit() and int(t.text) in a.years and t.index not in category_positions | page:
            a.values.append(Value("year", int(t.text), t.index, t.index + 1))
    languages = [a.language] if a.language else list(vocab.languages)
    # operator words are looked for on the words no entity took (stop words included)
    spans = operator_spans(tokens, free, languages)
    a.operators = spans
    a.combos = combinations(a.values, spans)
    in_operators = {p for s, e, _ in spans for p in range(s, e)}
    a.negated = negations(tokens, free - in_operators, languages, vocab.forms, vocab.is_entry_word)

"""Does a supported claim answer the question?  The relevance gate and the coverage of the delivered claims.

:func:`relevance_gate` builds what a claim must address for one question (:class:`RelevanceGate`: its topic
words and their idf weights, the value, count, action or person it asks for, a definition's subject);
:func:`claim_relevance` says why a claim's quote, with its list introduction and the headings above it, does
not answer it (the checker then fails the claim with ``off_question``); :func:`coverage` is the share of the
question's content words the delivered claims address (the coverage gate of
:func:`query.answer.checker.run_generation`).  Word rules over the profiles' word classes; the calibrated
answerability score is :mod:`query.answer.answerability`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from artifacts.text.profile import crosses_language
from artifacts.text.words import WordSet, content_words, fold_word, verb_words, word_set
from query.answer.asked import (
    CountFocus,
    action_family,
    action_words,
    asks_people,
    asks_person,
    count_focus,
    states_action,
    states_count,
)
from query.answer.evidence import FRONT_MATTER_SECTIONS, Claim, EvidenceItem
from query.answer.quotes import _detail_tokens, _numbers, name_occurs, normalize_quote, question_names, support_text
from query.answer.sentences import Unit, carries_value, defines, link_only, text_language, text_units
from query.graph.names import capital_runs, damerau1, tokenize
from query.question import DefinitionQuestion, QuestionFocus, definition_question, question_focus
from query.search.snippets import display_text

# --------------------------------------------------------------------------- coverage

def coverage(question: str, claims: Iterable[Claim], evidence: Sequence[EvidenceItem],
             resolved: Iterable[str] = ()) -> float:
    """Return the share (0..1) of the question's content words that the delivered claims address.

    Content words: :func:`artifacts.text.words.content_words` (BM25 folding analyzer, stop words of
    sk/cs/en/de/pl dropped) without the words that only frame the question
    (:func:`query.question.question_focus`: interrogatives, "vypíš", the ``time`` of "what time");
    a word counts as covered when it matches (:func:`artifacts.text.words.words_match`:
    inflection by shared prefix, Slovak/Czech cognates) a word of some claim's *quote*, of the
    sentence introducing the quote's list (``Ciele:`` above ``- Overiť ...``), of the headings above
    the quote, or of the cited item's title or heading path.  So the figure describes what is
    delivered, not the whole cited chunk.  A question without content words, or one that names
    someone (:func:`question_names`) whom the cited evidence never names, has coverage 0.0.
    ``resolved``: question words an engine already answered for (the words a graph answer's analysis
    explained: a slug "zoul" resolved to the author it names, the intent's words); they count as covered.
    """
    wanted = list(question_focus(question).words) or content_words(question)
    if not wanted:
        return 0.0
    done = word_set(" ".join(resolved))
    by_id = {item.evidence_id: item for item in evidence}
    claims = list(claims)
    cited = [by_id[e] for e in dict.fromkeys(e for claim in claims for e in claim.evidence) if e in by_id]
    support = "\n".join(support_text(item) for item in cited)
    if not all(name_occurs(name, support) or all(done.has(fold_word(w)) for w in name)
               for name in question_names(question)):
        return 0.0
    sets: list[WordSet] = []
    for claim in claims:
        for eid in claim.evidence:
            if eid in by_id:
                own, context = _claim_words(claim.quote, by_id[eid])
                sets += [own, context]
    return sum(1 for w in wanted if done.has(w) or any(s.has(w) for s in sets)) / len(wanted)


# --------------------------------------------------------------------------- relevance

RELEVANCE_SHARE = 0.4
"""Least share (0..1, idf-weighted when the bundle's weights are given) of the question's topic words
a claim must address (its quote and list introduction count 1, the headings, title and heading path
above it 0.5)."""
VALUE_SHARE = 0.5
"""For a question asking for a value (count, time, grade): least share of its topic words (counted,
not weighted: each names what the value is of) in the claim's own quote and list introduction
(headings do not count: a chapter's page count under the thesis heading is not the thesis's page
count)."""
KEY_SHARE = 0.9
"""Question words weighing at least this share of the heaviest (non-verb) word count as its most specific words."""
_CONTEXT_WEIGHT = 0.5
_KIND_LABEL = {"count": "a number", "time": "a date or time", "grade": "a grade"}


def _claim_words(quote: str, item: EvidenceItem) -> tuple[WordSet, WordSet]:
    """``(own, context)`` words of a quote in ``item``: own = the quote and, for a list item, the
    sentence that introduces its list; context = the headings above it, the item's title and heading path."""
    own, context, _, _, _, _ = _quote_words(quote, item.text, item.title or "", tuple(item.heading_path))
    return own, context


def _section_words(quote: str, item: EvidenceItem) -> WordSet:
    """The words of the section a quote sits in: its headings (above it in the chunk, and the chunk's
    heading path), or the document title when it sits under none.  A newsletter's title names all its
    topics ("Novinky za září 2019: První HackDay | Jak to u nás chodí | …"); a sentence under
    "Meetup #2 v STRV" is about that meetup, not about every topic of the title."""
    return _quote_words(quote, item.text, item.title or "", tuple(item.heading_path))[2]


LABEL_WORDS = 5
"""A heading of at most this many words is a label that names its section's subject ("Zadanie",
"Úlohy práce"); a longer one is a sentence (a quotation used as a heading) and names nothing asked."""


def _names_thing(quote: str, item: EvidenceItem, thing: str) -> bool:
    """Whether the section of ``quote`` names ``thing`` in a short heading (a label, :data:`LABEL_WORDS`),
    or ``quote`` is a list item: a list enumerates the things a "which X" question asks for ("Aké úlohy
    …?" answered by the task list under "Zadanie") without naming X in each item."""
    _, _, _, labels, in_list, _ = _quote_words(quote, item.text, item.title or "", tuple(item.heading_path))
    return in_list or labels.has(thing)


@lru_cache(maxsize=1024)
def _quote_words(quote: str, text: str, title: str,
                 heading_path: tuple[str, ...]) -> tuple[WordSet, WordSet, WordSet, WordSet, bool, WordSet]:
    """``(own, context, section, labels, in_list, headings)`` word sets of a quote in an evidence text
    (see :func:`_claim_words`, :func:`_section_words`, :func:`_names_thing`; ``headings``: the headings
    above it only, no title)."""
    units = text_units(text)
    own = [quote]
    headings: list[str] = [*heading_path]
    in_list = False
    for unit in _units_of_quote(quote, units):
        in_list = in_list or unit.list_id is not None
        headings.extend(unit.headings)
        if unit.list_id is not None:
            own.extend(u.text for u in units if u.leads == unit.list_id)
    # a front-matter description is about the whole document: its title is its section heading
    section = [title, *headings] if all(h in FRONT_MATTER_SECTIONS for h in headings) else headings
    labels = [h for h in headings if len(h.split()) <= LABEL_WORDS]
    return (word_set("\n".join(own)), word_set("\n".join([title, *headings])), word_set("\n".join(section)),
            word_set("\n".join(labels)), in_list, word_set("\n".join(headings)))


def quote_section(quote: str, item: EvidenceItem) -> tuple[str, ...]:
    """The headings ``quote`` sits under in ``item``: the chunk's heading path, then the headings above the
    quote inside the chunk text (``("description",)`` for a quote of a front-matter description chunk)."""
    for unit in _units_of_quote(quote, text_units(item.text)):
        return tuple(dict.fromkeys((*item.heading_path, *unit.headings)))
    return tuple(item.heading_path)


def _units_of_quote(quote: str, units: list[Unit]) -> Iterator[Unit]:
    """The units of an evidence text that hold ``quote`` or lie inside it (compared normalised)."""
    target = normalize_quote(quote)
    for unit in units:
        text = normalize_quote(unit.text)
        if text and (text in target or target in text):
            yield unit


@dataclass(frozen=True)
class RelevanceGate:
    """What a claim must address for one question (built once per question by :func:`relevance_gate`).

    ``focus``: the question's :class:`~query.question.QuestionFocus`; ``words``: its topic words
    to check (names and ``ignore`` words removed; in a question in another language than the
    evidence, words that occur in no evidence item are waived: they cannot be checked lexically);
    ``waived``: those waived words; ``unverifiable``: the question has topic words but none can be
    checked (every one waived), so no claim can be shown to answer it; ``weights``: per word of
    :attr:`words` (a word the index does not know weighs at most as much as the heaviest known
    one); ``unknown``: the question's first topic word when the bundle's index does not know it at
    all (what the question asks about is likely absent from the pages: a claim must address it);
    ``definition``: set when the question asks what or who something is ("Co je X?"): a claim's
    quote must then define X (:func:`query.answer.sentences.defines`), not merely mention it; ``verbs``:
    those of :attr:`words` that are verb forms (:func:`artifacts.text.words.verb_words`), never the
    question's most specific word while it has other words; ``count``: what a count question counts
    (:func:`query.answer.asked.count_focus`: a quote must state a number of it); ``action``: the action family
    of a who question ("Kdo založil X?": ``found``; :func:`query.answer.asked.action_family`), which a quote must
    name; ``person``: the question asks for a person and is no definition question ("Kdo převzal …?",
    "Which member …?"; :func:`query.answer.asked.asks_person`): a quote must name someone the question does not;
    ``people``: it asks who all ("Kdo všechno …?", :func:`query.answer.asked.asks_people`): a quote must name two;
    ``numbers``: the numbers the question itself gives (``{"60", "70"}`` of "… when they expected only
    60-70?"), which answer no count or time question.
    """

    focus: QuestionFocus
    words: tuple[str, ...]
    waived: tuple[str, ...] = ()
    unverifiable: bool = False
    weights: tuple[float, ...] = ()
    unknown: frozenset[str] = frozenset()
    definition: DefinitionQuestion | None = None
    verbs: frozenset[str] = frozenset()
    count: CountFocus | None = None
    action: str | None = None
    person: bool = False
    people: bool = False
    numbers: frozenset[str] = frozenset()

    def weight(self, word: str) -> float:
        """The weight of one of :attr:`words` (1.0 without weights)."""
        return self.weights[self.words.index(word)] if self.weights else 1.0


def relevance_gate(question: str, evidence: Sequence[EvidenceItem], ignore: Iterable[str] = (),
                   weights: dict[str, float] | None = None, unknown: Iterable[str] = ()) -> RelevanceGate:
    """Return the :class:`RelevanceGate` of ``question`` over ``evidence``.

    ``ignore``: words already resolved elsewhere (person names the graph recognised), folded or not.
    ``weights``: ``{folded question word: idf}`` over the bundle (:attr:`query.answer.rag.Context.word_weights`,
    typos already mapped to indexed words); a rare word, or one the pages never use, then weighs
    more than a word found on every page ("heslo" against "server").  Without it every word weighs 1.
    ``unknown``: question words the index does not know (:attr:`query.answer.rag.Context.unknown_words`).
    A word of 5+ letters that no evidence word matches but one is a single edit away from
    (``dilpomovej``) is taken as that word, as in name matching.
    """
    focus = question_focus(question)
    # what a "which X" question asks for is never resolved elsewhere: "team" of "Which team won …?" is
    # no person the graph knows, however it matched
    asked_for = {focus.thing, focus.head} - {None}
    names = {fold_word(w) for name in question_names(question) for w in name} | {
        fold_word(w) for w in ignore if fold_word(w) not in asked_for}
    weights = dict(weights or {})
    unknown_set = set(unknown)
    words = [w for w in (list(weights) if weights else focus.words) if w not in names]
    if words and evidence:
        vocabulary = word_set("\n".join(support_text(item) for item in evidence))
        for i, w in enumerate(words):
            if len(w) >= 5 and w.isalpha() and not vocabulary.has(w):
                close = sorted(v for v in vocabulary.words if abs(len(v) - len(w)) <= 1 and damerau1(v, w))
                if close:
                    words[i] = close[0]
                    if w in weights:
                        weights[close[0]] = weights.pop(w)
                    unknown_set.discard(w)
    waived: list[str] = []
    if words and evidence:
        # Czech and Slovak are checked word by word like one language (cognates match, see
        # words_match; profiles list them as `close`): a Czech question's "plat" absent from Slovak
        # evidence is not waived
        if crosses_language(text_language(question), [text_language(item.text) for item in evidence[:4]]):
            everything = word_set("\n".join(support_text(item) for item in evidence))
            waived = [w for w in words if not everything.has(w)]
            unknown_set = set()  # another language: words the index does not know are expected
    checked = tuple(dict.fromkeys(w for w in words if w not in waived))
    if weights:
        # a word the index does not know has the highest idf, which would let a paraphrasing verb
        # ("preštudoval" for "Vypracovaný prehľad") outweigh every word the pages do use
        known = [weights[w] for w in checked if w not in unknown_set]
        cap = max(known, default=1.0)
        weights = {w: min(v, cap) if w in unknown_set else v for w, v in weights.items()}
    # the word after "aký / which" is what the question asks about ("heslo" in "Aké je heslo na
    # školský server?"); when the index does not know it, a claim must address it.  Other words the
    # index does not know (a paraphrasing verb: "chcel", "zostaviť") cannot be matched by any
    # claim, so they are left out of the share rather than weighing against every claim alike.
    head = frozenset({focus.head} if focus.head else ()) & unknown_set & set(checked)
    if len(checked) > len(unknown_set & set(checked) - head):
        dropped = (unknown_set & set(checked)) - head
        waived += sorted(dropped)
        checked = tuple(w for w in checked if w not in dropped)
    definition = definition_question(question)
    return RelevanceGate(focus, checked, tuple(waived), unverifiable=bool(words) and not checked,
                         weights=tuple(max(weights[w], 1e-6) for w in checked) if weights else (),
                         unknown=head, definition=definition,
                         verbs=verb_words(question) & frozenset(checked),
                         count=count_focus(question) if focus.kind == "count" else None,
                         action=action_family(question),
                         person=asks_person(question) and definition is None,
                         people=asks_people(question),
                         numbers=frozenset(_numbers(question)))


_QUESTION_END = re.compile(r"[?？][\s\"'“”„»«)\]*_]*$")
"""A quote ending in a question mark (closing quotes, brackets and emphasis markers after it allowed)."""


def claim_relevance(gate: RelevanceGate, claim: Claim, evidence: Sequence[EvidenceItem]) -> list[str]:
    """Return why ``claim`` does not answer the question of ``gate`` (empty: it does).

    The claim's *quote* is judged (the verbatim, checked part), with its list introduction and the
    headings above it (:func:`_claim_words`); the claim text is not, as the checker cannot tell
    whether it says what its quote says.  Fails when the question's topic words cannot be checked
    at all; when the quote and its list introduction share none of them; when the question's first
    topic word, unknown to the index, is not addressed either (it names something the pages never
    mention, "heslo" in "Aké je heslo na školský server?"); when they address less
    than :data:`RELEVANCE_SHARE` of them (context words at half weight) or, for a value question,
    less than :data:`VALUE_SHARE` in the quote itself; when a value question (count, time,
    grade) gets a quote that states no such value (a count question: no number that counts the thing
    asked for, :mod:`query.answer.asked`); when a definition question ("Co je X?", "What is X?", "Kdo je X?")
    gets a quote that mentions X without defining it; when a who question about an action ("Kdo
    založil X?") gets a quote without a word for that action, or a contact line; or when the quote is
    itself a question.
    """
    if gate.unverifiable:
        return ["none of the question's words occurs in the evidence, so no claim can be shown to answer it"]
    by_id = {item.evidence_id: item for item in evidence}
    items = [by_id[e] for e in claim.evidence if e in by_id]
    if not items:
        return []  # the checker reports unknown or missing evidence
    details: list[str] = []
    if _QUESTION_END.search(claim.quote):
        # an interview's "Kolik lidí vlastně na Code for Romania dělá …?" answers neither "Co je Code
        # for Romania?" nor a count question: a question states nothing
        details.append("the quote is itself a question; it states nothing")
    if link_only(claim.quote):
        # "Přečti si, proč se mění vedení" (a link to another post) does not say since when anyone leads
        details.append("the quote is only a link; it states nothing")
    if gate.words:
        pairs = [_claim_words(claim.quote, item) for item in items]
        counted = set(gate.count.nouns) if gate.count is not None and states_count(
            claim.quote, gate.count.nouns, beneficiary=gate.count.beneficiary) else set()
        if gate.action is not None and states_action(gate.action, claim.quote):
            # "založili" answers "founded" in any language of the family table
            counted.update(action_words(gate.action, gate.words))
        # a number that counts the asked noun addresses it: "130 IT profesionálů" answers "Kolik lidí …?"
        own_words = [w for w in gate.words if w in counted or any(o.has(w) for o, _ in pairs)]
        context_words = [w for w in gate.words if w not in own_words and any(c.has(w) for _, c in pairs)]
        total = sum(gate.weight(w) for w in gate.words)
        own = sum(gate.weight(w) for w in own_words) / total
        share = own + _CONTEXT_WEIGHT * sum(gate.weight(w) for w in context_words) / total
        missing = sorted(w for w in gate.unknown if w not in own_words and w not in context_words)
        acts = set(action_words(gate.action, gate.words)) if gate.action is not None else set()
        acted_on = [w for w in gate.words if w not in acts] if gate.action is not None else []
        if not own_words:
            details.append("the quote shares no word with what the question asks")
        elif acted_on and not any(w in own_words or w in context_words for w in acted_on):
            # "Who founded Česko.Digital?" is not answered by "…Code for Romania, a non-profit
            # organization founded in 2016…": the action is there, what it was done to is not
            details.append("the question asks who did something to what it names; the quote does not name it")
        elif gate.focus.thing in own_words and len(gate.words) >= 2 and not any(
                w in own_words or w in context_words for w in gate.words if w != gate.focus.thing):
            # "Which team won the first Česko.Digital hackday?" is not answered by "We have a dedicated
            # team …" of another organisation: a rare word for the thing asked for is all it shares
            details.append("the quote names the thing the question asks for, but nothing of what it asks about")
        elif missing:
            details.append("what the question asks about occurs nowhere in the pages, nor in the quote")
        elif share < RELEVANCE_SHARE:
            details.append(f"the quote addresses too little of the question ({share:.2f} < {RELEVANCE_SHARE})")
        elif gate.focus.thing in gate.words and gate.focus.thing not in own_words and len(gate.words) >= 2 \
                and not any(_names_thing(claim.quote, item, gate.focus.thing) for item in items):
            # "Jaké je heslo k firemní wifi?" is not answered by a sentence about public WiFi under a
            # heading that quotes someone's password: the thing asked for must be named by the quote,
            # its list introduction or a short heading of its section; a list item enumerates the things
            # asked for ("Aké úlohy …?" answered by the task list under "Zadanie")
            details.append("the quote does not name the thing the question asks for")
        elif gate.focus.kind and len(own_words) / len(gate.words) < VALUE_SHARE:
            details.append(f"the quote itself names too little of what the question asks a value of "
                           f"({len(own_words) / len(gate.words):.2f} < {VALUE_SHARE})")
        elif gate.weights and len(gate.words) >= 2 and not (
                set(_key_words(gate)) & {w for w in gate.words
                                         if any(o.has(w) for o, _ in pairs)
                                         or any(_section_words(claim.quote, item).has(w) for item in items)}):
            # the most specific word is what the question is about ("plat" in "Jaký plat má Jan
            # Kotara jako CEO Česko.Digital?"): a quote about the CEO without it answers nothing asked;
            # it must be in the quote or the headings of its section, not only in a title of many topics
            details.append("the quote does not address the question's most specific word")
    if gate.definition is not None and not defines(gate.definition, claim.quote):
        details.append(f"the question asks {'who' if gate.definition.kind == 'person' else 'what'} "
                       "its subject is; the quote does not define it")
    elif gate.definition is not None and gate.definition.qualifier and not any(
            all(own.has(w) or context.has(w) for w in gate.definition.qualifier)
            for own, context in (_claim_words(claim.quote, item) for item in items)):
        # "Co je projekt Digitální inkluze od Česko.Digital?": a definition of some other "Digitální
        # inkluze" page that never names Česko.Digital does not say it is theirs
        details.append("the question asks about its subject as qualified by a name; the quote and its "
                       "headings do not name it")
    if gate.count is not None:
        details += _count_details(gate.count, claim.quote, items)
    elif not carries_value(gate.focus.kind, claim.quote):
        details.append(f"the question asks for {_KIND_LABEL[str(gate.focus.kind)]}; the quote states none")
    if gate.focus.kind in ("count", "time") and _only_numbers_of(gate.numbers, claim.quote):
        # "we were expecting about 60–70 people" does not say how many came when the question says 60-70
        details.append("the quote only repeats numbers the question gives")
    if gate.person and not names_someone(question_words(gate), claim.quote, 2 if gate.people else 1):
        details.append("the question asks who; the quote names no one it does not already name" if not gate.people
                       else "the question asks who all; the quote names fewer than two people")
    if gate.action is not None and not states_action(gate.action, claim.quote):
        details.append("the question asks who did something; the quote does not say who did it "
                       "(no word for the action, no person named, or a contact line)")
    return details


def _only_numbers_of(numbers: frozenset[str], quote: str) -> bool:
    shown = _numbers(display_text(quote))
    return bool(shown) and set(shown) <= numbers


def repeats_numbers(question: str, quote: str) -> bool:
    """Whether every number of ``quote`` (as displayed; at least one) is a number ``question`` gives
    itself: "… expecting about 60–70 people" for "How many came, when they expected only 60-70?"."""
    numbers = frozenset(_numbers(question))
    return bool(numbers) and _only_numbers_of(numbers, quote)


def question_words(gate: RelevanceGate) -> WordSet:
    """The words of the question of ``gate`` (its focus words, waived and resolved ones included)."""
    return word_set(" ".join((*gate.focus.words, *gate.waived)))


def names_someone(asked: WordSet, quote: str, least: int = 1) -> bool:
    """Whether ``quote`` names at least ``least`` people the question does not: a capitalised word inside a
    sentence or a name of two or more capitalised words (:func:`_detail_tokens`; no acronym, no "I’m": "UX",
    "CEO" name no one) none of whose name's words is among ``asked`` (the question's words), each name
    counted once; for more than one, only full names of two or more words count ("Shay Banon, tvůrce
    Elasticsearch" names one person).  "We have a dedicated team …, a team of UX designers" names no one;
    "Funkci převzala Eva Pavlíková" names no one new for "Kdo po Evě Pavlíkové …?" ("Eva" belongs to the
    asked "Pavlíková"); a name glued with a dot ("Česko.Digital") is an organisation's and names no one."""
    shown = display_text(quote)
    runs = capital_runs(tokenize(shown), set())
    named: set[tuple[str, ...]] = set()
    for word in _detail_tokens(shown):
        word = re.sub(r"['’]\w*$", "", word)  # "I’m" is "I"
        if len(word) < 2 or not word[:1].isupper() or word.isupper() or any(c.isdigit() for c in word):
            continue
        run = next((r for r in runs if any(t.text.startswith(word) for t in r)), [])
        name: list[str] = []
        for token in run:  # "Česko.Digital" is one word of a name, as the question writes it
            if token.joined and name:
                name[-1] += "." + token.text
            else:
                name.append(token.text)
        if any("." in w for w in name):
            continue  # "Česko.Digital", "Pomáháme.Digital": a name glued with a dot is an organisation's
        if not any(asked.has(fold_word(w)) for w in [word, *name]) and (least == 1 or len(name) >= 2):
            named.add(tuple(name) or (word,))
    return len(named) >= least


def _count_details(count: CountFocus, quote: str, items: Sequence[EvidenceItem]) -> list[str]:
    """Why ``quote`` does not state how many of ``count.nouns`` (empty: it does): no number counts them
    (a year, a date, "3leté", a price do not), or a qualifier of the counted noun ("lidí *z komunity*")
    is named neither by the quote nor by the headings above it (a document title does not count: "Svět je
    v krizi, komunity sehrávají…" does not make every number of the post one of the community)."""
    if not states_count(quote, count.nouns, beneficiary=count.beneficiary):
        return [f"the question asks how many {' '.join(count.nouns)}; no number of the quote counts them"]
    for word in count.qualifiers:
        if not any(own.has(word) or headings.has(word) for own, _, _, _, _, headings in (
                _quote_words(quote, item.text, item.title or "", tuple(item.heading_path)) for item in items)):
            return [f"the quote does not say the number counts {' '.join(count.nouns)} of '{word}'"]
    return []


def _key_words(gate: RelevanceGate) -> list[str]:
    """The question's most specific words: those within :data:`KEY_SHARE` of the highest weight (idf over
    the bundle) among its words that are no verb forms ("hackday" and "prvnim", not the rarer "seslo",
    in "Kolik lidí se sešlo na prvním hackdayi?": a verb says what happened, the pages may word it
    otherwise); all words when every one is a verb form."""
    pairs = [(w, weight) for w, weight in zip(gate.words, gate.weights, strict=True) if w not in gate.verbs]
    pairs = pairs or list(zip(gate.words, gate.weights, strict=True))
    top = max(weight for _, weight in pairs)
    return [w for w, weight in pairs if weight >= KEY_SHARE * top - 1e-9]

"""Evidence text that addresses whoever reads it, a model or a person (:func:`addresses_reader`).

A clause that opens with an imperative of answering, saying or ignoring (profile ``instruction_verbs``), possibly
after words of ``instruction_lead``; such an imperative near an ``addressee``; or a short lead before a colon
that names an addressee.  Such text is data that tries to be an instruction, never evidence: the extractive
generator never picks it (:func:`query.answer.sentences.addresses_model`) and a quote that overlaps it fails
with ``instruction_text`` (:func:`query.answer.binding.quotes_instruction`).
"""

from __future__ import annotations

import re
import unicodedata

from artifacts.text.profile import available
from query.answer.wordclasses import _CLAUSE_PUNCT, _lexicon, _tokens

_CODE = re.compile(r"`[^`]*`")
_MAX_LEAD = 6          # words of a lead before a colon that names whom a sentence addresses


def _addressed(tokens: list[str], phrases: tuple[tuple[str, ...], ...]) -> bool:
    """True when ``tokens`` hold one of ``phrases``; in a phrase that ends in ``*`` every word is a prefix
    (``asistent*``: "asistenta", "asistentovi"; ``jazykov* model*``: "jazykové modely", "jazykovým modelom")."""
    for phrase in phrases:
        loose = phrase[-1].endswith("*")
        words = tuple(w.rstrip("*") for w in phrase) if loose else phrase
        for i in range(len(tokens) - len(words) + 1):
            window = tokens[i:i + len(words)]
            if all(t.startswith(w) if loose else t == w for t, w in zip(window, words, strict=True)):
                return True
    return False


def _addressed_lead(text: str) -> bool:
    """True when ``text`` opens with a short lead before a colon that names an addressee of profile
    ``addressee`` ("Poznámka pre asistenta:", "Note to AI systems:", "Pre jazykové modely:") and what follows
    tells it what to say or answer (a word of ``instruction_verbs``, ``saying_verbs`` or ``answer_noun``)."""
    from query.search.snippets import display_text

    prose = unicodedata.normalize("NFC", display_text(_CODE.sub(" ", text)))
    lead, colon, rest = prose.partition(":")
    lead_tokens, rest_tokens = _tokens(lead), set(_tokens(rest))
    if not colon or not lead_tokens or len(lead_tokens) > _MAX_LEAD:
        return False
    lex = _lexicon()
    return any(_addressed(lead_tokens, lex.addressee[code])
               and rest_tokens & (lex.verbs[code] | lex.saying[code] | lex.answer_noun[code])
               for code in available())


def _matches_phrase(tokens: list[str], i: int, phrases: tuple[tuple[str, ...], ...]) -> int:
    """Length of the longest phrase of ``phrases`` starting at ``tokens[i]`` (0: none)."""
    for phrase in phrases:
        if tuple(tokens[i:i + len(phrase)]) == phrase:
            return len(phrase)
    return 0


def _clauses(text: str) -> list[list[str]]:
    """Folded tokens of each clause of ``text`` (inline code, link destinations and markup left out)."""
    from query.search.snippets import display_text

    prose = display_text(_CODE.sub(" ", text))
    return [_tokens(part) for part in _CLAUSE_PUNCT.split(unicodedata.normalize("NFC", prose)) if part.strip()]


def addresses_reader(text: str) -> bool:
    """True when ``text`` (one sentence or list item) addresses whoever reads it, a model or a person.

    A clause that opens (after any words of profile ``instruction_lead``: "please", "you must", "Dear
    assistant") with an imperative of answering or ignoring (``instruction_verbs``: "Ignore …",
    "odpovedz …") or with an imperative of saying followed within four words by a ``complementizer``
    ("answer that …", "povedz mu, že …"); or a clause holding such an imperative within three words of an
    ``addressee`` ("… then ignore the system prompt").  Such text is data that tries to be an
    instruction: never evidence.
    """
    if _addressed_lead(text):
        return True
    lex = _lexicon()
    clauses = _clauses(text)
    flat = [t for clause in clauses for t in clause]
    offset = 0
    for clause in clauses:
        for code in available():
            verbs, saying, comp = lex.verbs[code], lex.saying[code], lex.complementizer[code]
            i = 0
            while i < len(clause):
                step = _matches_phrase(clause, i, lex.lead[code])
                if not step:
                    break
                i += step
            if i < len(clause):
                first = clause[i]
                if first in verbs or (first in saying and comp & set(flat[offset + i + 1:offset + i + 5])):
                    return True
            for j, token in enumerate(clause):
                if token in verbs or token in saying:
                    near = range(max(0, j - 3), min(len(clause), j + 4))
                    if any(_matches_phrase(clause, k, lex.addressee[code]) for k in near if k != j):
                        return True
        offset += len(clause)
    return False

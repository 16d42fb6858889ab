"""The intent of an analysed question: which intent's slots the question fills and whose words
explain it."""

from __future__ import annotations

from query.graph.analysis import Analysis
from query.graph.index import GraphIndex

# Concepts each intent may contain besides ``filler``, ``who`` and ``person`` (question words and
# nouns for people): a concept the intent does not use ("Kolik stran má diplomová práce X?" has a
# count the works of a person do not answer) means the question asks for something else.
_ALLOWED: dict[str, set[str]] = {
    "works_of_person": {"work", "year", "author", "document", "category"},
    "title_of_work": {"title", "work", "topic", "year", "start", "author", "document", "category"},
    "year_of_work": {"year", "work", "start", "author", "document", "category"},
    "supervisor_of_work": {"supervisor", "work", "year", "start", "document", "category"},
    "start_year_of_person": {"start", "year"},
    "tags_of_person": {"tag", "topic", "document", "author", "start", "year"},
    "topics_of_person": {"topic", "document", "author", "start", "year"},
    "common_tags": {"tag", "topic", "common", "document", "author", "start", "year"},
    "common_topics": {"topic", "common", "document", "author", "start", "year"},
    "persons_with_tag": {"tag", "topic", "document", "author", "count", "common"},
    "documents_with_tag": {"tag", "topic", "document", "count", "year", "common"},
    "documents_of_author": {"document", "author", "count", "tag", "year"},  # tag: with a tag value only
    "author_of_document": {"author", "document"},
    "tags_of_document": {"tag", "document"},
    "topics_of_document": {"topic", "document"},
    "persons_with_work": {"work", "count", "year", "author", "document", "category"},
    "persons_started": {"start", "year", "count", "category"},
    "supervised_by": {"supervisor", "work", "year", "count", "document", "start", "category"},
}
_ALWAYS = {"filler", "who", "which", "person"}
_USES_DOCUMENT_AUTHORS = {"documents_of_author", "supervised_by", "needs_person"}
"""Intents whose answer is selected by the document author named in the question."""
_NOT_LINKS = ("supervisor", "start", "category", "common", "tag")
"""Concepts a link question cannot use: what they ask about is no page a link leads to."""
# Intents that take a year from the question as a restriction (of works, of persons); a year in a
# question of any other intent is a word the intent cannot use ("Aké tagy mal X v roku 2019?":
# tags have no year), unless a start word makes it the start year that identifies the person.
_YEAR_SLOT = {"works_of_person", "title_of_work", "supervisor_of_work", "persons_with_work", "persons_started",
              "supervised_by", "documents_of_author", "documents_with_tag"}  # documents: the year of their date
_YEARS_COMBINED = {"persons_with_work", "persons_started", "supervised_by"}
"""Intents that take several years joined by and / or / but not (:data:`query.graph.combined._COMBINES`)."""
_PREMISES = {"year_of_work", "start_year_of_person", "supervisor_of_work", "tags_of_person"}
"""Intents whose fact a premise question ("Je pravda, že ...?", ``premise`` words) states and the graph
checks: a work's year, a start year, a supervisor (a document author named), tags (tag values named)."""
_NAMES_NO_PERSON = {"author_of_document", "tags_of_document", "topics_of_document", "documents_with_tag",
                    "persons_with_tag", "links", "persons_started", "persons_with_work"}
"""Intents whose slots take no person: a capitalised word of the question that names nobody and nothing
the graph has is a word the intent does not explain, so the question is not understood."""
# Intents whose answer is a year: "rok"/"kedy" without a year value is what they ask.
_ASKS_YEAR = {"year_of_work", "start_year_of_person", "works_of_person", "persons_with_work"}


def intent_of(a: Analysis, index: GraphIndex) -> str:
    """The intent whose slots the question fills and whose words explain the question, else
    ``unsupported`` (or ``content``, ``needs_person``, ``links_unknown_page``)."""
    declared = declared_intent(a, index)
    if declared is not None:
        return declared
    intent = _choose_intent(a, index)
    if a.unmatched_names and intent in _NAMES_NO_PERSON:
        return "unsupported"  # "In welcher Programmiersprache ist der Server geschrieben?": a word nothing explains
    if intent == "links" and (a.years or any(w.isdigit() for w in a.unexplained)):
        return "unsupported"  # links have no year or number
    if intent == "links" and a.has(*_NOT_LINKS):
        return "unsupported"  # "Koľko vedúcich prác je uvedených na stránke Ľudia?" counts supervisors, not links
    if a.has("premise") and intent not in _PREMISES:
        return "unsupported"  # a stated fact the graph cannot check
    if a.document_authors and intent not in _USES_DOCUMENT_AUTHORS \
            and not (a.has("premise") and intent == "supervisor_of_work"):
        return "unsupported"  # a supervisor the answer would ignore: "Ktorí študenti Evy Kolárovej majú tag X?"
    allowed = _ALLOWED.get(intent)
    if allowed is None:
        return intent
    if not _years_explained(a, intent):
        return "unsupported"
    allowed = allowed | _ALWAYS | ({"premise"} if intent in _PREMISES else set())
    # a word may belong to several concepts ("téma": title and topic): it is explained by any of them
    used = {p for c, hits in a.concepts.items() if c in allowed for s, e, _ in hits for p in range(s, e)}
    for concept, hits in a.concepts.items():
        if concept not in allowed and any(not set(range(s, e)) <= used for s, e, _ in hits):
            return "unsupported"
    return intent


def _years_explained(a: Analysis, intent: str) -> bool:
    """Whether the years and the year/start words of the question belong to ``intent``; sets
    ``a.work_years`` (the years that restrict the answer).

    A start word with a year identifies the person by start year ("X, ktorý začal v roku 2016");
    a start or year word with no year value in an intent that does not answer with a year is a
    second question ("V ktorom roku začal X a aké má tagy?").
    """
    if a.has("premise") and intent in ("year_of_work", "start_year_of_person"):
        a.stated_years = list(a.years)  # "Je pravda, že X obhájil v roku 2020?": the year to check
        return len(a.years) == 1
    identifying = a.has("start") and intent not in ("persons_started", "start_year_of_person")
    if identifying and a.years:
        a.work_years = []
        return len(a.years) == 1
    if a.has("start") and intent not in ("persons_started", "start_year_of_person"):
        return False
    if a.years:
        if intent not in _YEAR_SLOT or (len(a.years) > 1 and intent not in _YEARS_COMBINED):
            return False
        a.work_years = list(a.years)
        return True
    return not a.has("year") or intent in _ASKS_YEAR


def _choose_intent(a: Analysis, index: GraphIndex) -> str:
    persons = bool(a.persons)
    if a.has("link"):
        return "links" if (a.pages or persons) else "links_unknown_page"
    if not persons and not a.pages and not a.document_authors and a.has("author") and a.has("who") \
            and (a.has("document") or a.quoted) \
            and not a.has("supervisor", "tag", "topic", "count") \
            and not (index.has_works and (a.has("work") or a.work_types)):
        # "Kdo napsal článek X?", "Who wrote „Y“?", "Who wrote the post about Z?": only a page's author
        # answers it; no title of the graph fits the words (or several do), so it is refused, never
        # sent on to a text search that would answer with some page's text ("Kdo vytvořil Jehlomat?"
        # names no document and stays a question for the text)
        return "ambiguous_page" if a.ambiguous_pages else "unknown_page"
    if not persons and not a.pages and not a.document_authors and a.has("tag", "topic") \
            and (a.has("document") or a.quoted) and a.has("which", "who", "count") \
            and not a.tags and not a.topics and (a.unexplained or a.unmatched_names):
        # "Jakými tagy je označený ten článek k výročí …?": tags are front matter the text does not
        # hold; the post named is no title of the graph, so it is refused rather than searched
        return "ambiguous_page" if a.ambiguous_pages else "unknown_page"
    if a.has("content"):
        return "content"
    if a.unexplained:
        return "unsupported"
    if a.has("tag", "topic"):
        what = "tags" if a.has("tag") else "topics"
        if a.pages and not persons and not a.tags and not a.topics and len(a.pages[0].words) >= 2:
            return f"{what}_of_document"  # "Jaké štítky má článek X?"
        if a.has("topic") and not a.has("tag") and persons and a.specific_type and not a.has("common"):
            return "title_of_work"  # "Na akú tému písal X bakalársku prácu?"
        if (len(a.persons) == 1 or (a.document_authors and not persons)) and a.tags and not a.topics \
                and a.has("document") and a.has("author"):
            return "documents_of_author"  # "Které články se štítkem newsletter napsala Radka Horáková?"
        if len(a.persons) >= 2 and not a.has("common") and "person" in a.combos \
                and a.combos["person"].only == "and":
            return f"{what}_of_person"  # "Aké tagy majú X a Y?": each person's tags (answered per person)
        if len(a.persons) >= 2 or (a.has("common") and persons):
            return f"common_{what}"
        if persons:
            return f"{what}_of_person"
        if a.tags or a.topics:
            if a.has("document") and not a.has("person", "who", "author"):
                return "documents_with_tag"  # "Ktoré stránky majú tag python?"
            return "persons_with_tag"
        return "unsupported"
    if persons:
        if a.has("supervisor"):
            return "supervisor_of_work"
        if a.has("title") and index.has_works:
            return "title_of_work"
        if (a.has("year") or (a.has("premise") and a.years)) and a.specific_type and index.has_works:
            return "year_of_work"  # "Is it true that X defended the master thesis in 2020?": the year to check
        if a.has("start") and not a.work_types:
            return "start_year_of_person"
        if (a.has("work") or a.work_types) and index.has_works:
            return "works_of_person"
        if a.has("author") and not a.has("document") and index.has_works and index.person_kind == "page":
            return "works_of_person"  # on a thesis wiki, what a student "wrote" are her works
        if a.has("document", "author"):
            return "documents_of_author"
        return "unsupported"
    if a.document_authors and a.has("document", "author") and not a.has("work", "supervisor"):
        return "documents_of_author"
    if a.document_authors and a.has("supervisor") and not a.unmatched_names:
        return "supervised_by"  # "Aké práce viedla Zuzana Krajčíová?", "Koho školil Daniel Hládek?"
    if a.document_authors and not a.unmatched_names and a.has("person") \
            and (a.has("start") or a.work_types or a.has("work")) and not a.has("title") and index.has_works:
        return "supervised_by"  # "Ktorí študenti Evy Kolárovej začali v roku 2020?": the author of their pages
    if a.pages and a.has("author", "person") and a.has("author", "who", "which"):
        return "author_of_document"
    if a.has("start") and a.years and not a.work_types:
        return "persons_started"
    if index.has_works and (a.has("work") or a.work_types) and (a.has("count", "who", "which", "person") or a.years):
        if not a.document_authors and not a.unmatched_names:
            return "persons_with_work"
    if a.unmatched_names or a.document_authors:
        return "needs_person"
    return "unsupported"

ONE_PERSON = {"works_of_person", "title_of_work", "year_of_work", "supervisor_of_work", "start_year_of_person",
               "tags_of_person", "topics_of_person"}


def declared_intent(a: Analysis, index: GraphIndex) -> str | None:
    """The first intent the mapping declares (:class:`artifacts.graphmap.Intent`, in file order) that the
    question asks: it has every concept of the intent's ``words``, fills every slot with exactly one page
    or value, names no person, year or unknown name, has no word the vocabulary does not explain and no
    concept outside ``words``, ``allow`` and the question and document words; else ``None``."""
    if a.unexplained or a.persons or a.document_authors or a.unmatched_names or a.years or a.tags or a.topics:
        return None
    for name, intent in index.mapping.intents.items():
        if not all(a.has(w) for w in intent.words):
            continue
        filled = all(len(a.pages) == 1 if kind == "page" else len(a.field_values.get(kind.split(":", 1)[1], [])) == 1
                     for kind in intent.slots.values())
        if not filled or len(a.field_values) > len(intent.relations()):
            continue
        allowed = set(intent.words) | set(intent.allow) | _ALWAYS | {"document"}
        used = {p for c, hits in a.concepts.items() if c in allowed for s, e, _ in hits for p in range(s, e)}
        if any(c not in allowed and any(not set(range(s, e)) <= used for s, e, _ in hits)
               for c, hits in a.concepts.items()):
            continue
        return name
    return None

"""Graph answers as a reader gets them from ``/answer``: in the question's language, documents named
by their titles (paths only in the sources), long lists summed up honestly, every claim checkable.

A small blog is written here as a real Git repository (an authors file with slugs, posts with
``author``, ``tags`` and titles), built without flags with the hash embedder, and asked through
:func:`query.answer.pipeline.answer`.  Expected titles and counts come from the files written here.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import pytest

from query.answer.graph_phrasing import LIST_SHOWN

AUTHORS = """- id: jadv
  name: Jana Dvořáková
- id: tkuc
  name: Tomáš Kučera
"""
JANA_TITLES = [f"Zápisky z dobrovolnického víkendu číslo {i}" for i in range(1, 14)]
TOMAS_TITLES = ["Příručka řízení státních IT projektů", "Jak psát srozumitelně pro úřady"]


def _post(title: str, author: str, tags: list[str], slug: str) -> str:
    tag_lines = "".join(f"  - {t}\n" for t in tags)
    return (f'---\ntitle: "{title}"\nauthor: {author}\ntags:\n{tag_lines}date: 2023-01-01\nslug: {slug}\n---\n\n'
            f"## Úvod\n\nText příspěvku {slug} o tom, co jsme dělali a proč.\n")


@pytest.fixture(scope="module")
def blog(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> Any:
    from indexer.build import build_bundle
    from query.bundle import open_bundle

    tmp = tmp_path_factory.mktemp("graph-answers")
    repo = tmp / "repo"
    (repo / "content" / "posts").mkdir(parents=True)
    (repo / "content" / "authors.yaml").write_text(AUTHORS, encoding="utf-8")
    for i, title in enumerate(JANA_TITLES, start=1):
        (repo / "content" / "posts" / f"2023-01-{i:02d}-vikend-{i}.md").write_text(
            _post(title, "jadv", ["dobrovolnici"], f"vikend-{i}"), encoding="utf-8")
    for i, title in enumerate(TOMAS_TITLES, start=1):
        (repo / "content" / "posts" / f"2022-02-0{i}-tomas-{i}.md").write_text(
            _post(title, "tkuc", ["it", "stat"] if i == 1 else ["psani"], f"tomas-{i}"), encoding="utf-8")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "blog"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    result = build_bundle(repo, tmp / "store", embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    yield bundle
    bundle.close()


def _ask(bundle: Any, question: str) -> dict[str, Any]:
    from query.answer.generators import ExtractiveGenerator
    from query.answer.pipeline import answer, parse_answer_request
    from query.search.request import SearchOptions

    return asyncio.run(answer(bundle, parse_answer_request({"query": question}), SearchOptions(),
                              ExtractiveGenerator()))


def _unsupported(bundle: Any, body: dict[str, Any]) -> list[Any]:
    """Claims the answer evaluation's independent re-check rejects (empty: every claim holds)."""
    from query.eval.answers import AnswerQuestion, score_body

    row = score_body(AnswerQuestion("q", body["query"], "jsonl", True, (), ()), body, bundle, 0.0)
    return row["unsupported_claims"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(("question", "count", "more", "quotes"), [
    ("Jaké články napsala Jana Dvořáková?", "Počet: 13.", "A další 3.", ("„", "“")),
    ("Aké články napísala Jana Dvořáková?", "Počet: 13.", "A ďalšie 3.", ("„", "“")),
    ("Which posts did jadv write?", "Count: 13.", "And 3 more.", ("“", "”")),
])
def test_documents_of_author_by_title_in_the_question_language(blog: Any, question: str, count: str, more: str,
                                                              quotes: tuple[str, str]) -> None:
    body = _ask(blog, question)
    assert (body["status"], body["engine"]) == ("ok", "graph"), body
    text = body["answer"]
    assert text.startswith(count + " [S1]")
    # the first LIST_SHOWN titles are named, in the language's quotes, the rest summed up with their sources
    shown = [c["text"] for c in body["claims"][1:]][:LIST_SHOWN]
    assert len(body["claims"]) == 1 + len(JANA_TITLES)  # nothing cut: every post is a checked claim
    assert {t for t in JANA_TITLES if f"{quotes[0]}{t}{quotes[1]}" in text} == \
        {t for t in JANA_TITLES if any(t in s for s in shown)}
    assert len({t for t in JANA_TITLES if t in text}) == LIST_SHOWN
    assert more in text
    assert ".md" not in text and "content/" not in text
    assert len(body["sources"]) == len(JANA_TITLES)
    assert all(s["document_path"].startswith("content/posts/2023-01-") for s in body["sources"])
    assert text.endswith("".join(f"[S{i}]" for i in range(LIST_SHOWN + 1, len(JANA_TITLES) + 1)))
    coverage = body["answer_coverage"]
    assert (coverage["status"], coverage["coverage"]) == ("supported", 1.0)
    assert _unsupported(blog, body) == []


def test_author_of_a_post_names_the_post_by_its_title(blog: Any) -> None:
    body = _ask(blog, "Kdo je autorem příspěvku „Jak psát srozumitelně pro úřady“?")
    assert (body["status"], body["engine"]) == ("ok", "graph"), body
    assert body["answer"] == "„Jak psát srozumitelně pro úřady“: autor Tomáš Kučera. [S1]"
    assert body["sources"][0]["document_path"] == "content/posts/2022-02-02-tomas-2.md"
    assert body["answer_coverage"]["coverage"] == 1.0
    assert _unsupported(blog, body) == []


def test_short_list_is_shown_whole(blog: Any) -> None:
    body = _ask(blog, "Which posts did tkuc write?")
    assert body["status"] == "ok"
    assert body["answer"].startswith("Count: 2. [S1] ")
    assert all(f"“{t}”" in body["answer"] for t in TOMAS_TITLES)
    assert "more" not in body["answer"]
    assert _unsupported(blog, body) == []


def test_render_facts_uses_titles_and_the_language(blog: Any) -> None:
    from query.answer.graph_evidence import render_facts
    from query.graph.words import phrasing

    path = "content/posts/2022-02-01-tomas-1.md"
    facts = [{"subject": path, "predicate": "tagged", "object": "it"},
             {"subject": path, "predicate": "tagged", "object": "stat"}]
    titled = render_facts(facts, phrasing("en"), lambda p: blog.docs[p].title if p in blog.docs else None)
    assert titled == ["“Příručka řízení státních IT projektů”: tags it, stat."]
    assert render_facts(facts, phrasing("cs")) == [f"{path}: štítky it, stat."]
    assert phrasing("xx").lang == phrasing(None).lang == "sk"


def test_long_graph_lists_are_checked_whole(tmp_path: Path) -> None:
    """More fact lines than a generator reply may hold (checker.MAX_CLAIMS) are all checked, none cut."""
    from query.answer.attribution import MAX_CLAIMS
    from query.answer.evidence import EvidenceItem
    from query.answer.graph_phrasing import check_graph

    n = MAX_CLAIMS + 7
    items = [EvidenceItem(f"E{i}", "graph", f"„Příspěvek {i}“ (autor: Jana Dvořáková).", f"p{i}.md", f"S{i}", "c0")
             for i in range(1, n + 1)]
    body = {"status": "ok", "intent": "documents_of_author", "entities": {"language": "cs"},
            "answer": {"count": n}, "aggregation": {"count": n, "complete": True}}
    items[0] = EvidenceItem("E1", "graph", items[0].text, "p1.md", "S1", "c0",
                            facts=({"label": f"Počet: {n}.", "count": n},))
    outcome = check_graph("Jaké články napsala Jana Dvořáková?", items, body)
    assert outcome.status == "ok"
    assert len(outcome.claims) == n + 1


@pytest.mark.parametrize("question", [
    "Kdo napsal příručku řízení státních IT projektů?",  # the title's first word inflected
    "Kdo je autorem příspěvku „Příručka řízení státních IT projektů“?",
    "Kto napísal článok Příručka řízení státních IT projektů?",
    "Who wrote Příručka řízení státních IT projektů?",
    "Wer hat „Příručka řízení státních IT projektů“ geschrieben?",
    "Wer ist der Autor von Příručka řízení státních IT projektů?",
    "Kdo napsal příručku řízení státních?",  # the beginning of one title only
])
def test_natural_phrasings_of_a_posts_author(blog: Any, question: str) -> None:
    from query.graph.dispatch import answer_graph

    body = answer_graph(blog, {"query": question})
    assert (body["status"], body["intent"]) == ("ok", "author_of_document"), question
    assert body["answer"]["authors"] == ["Tomáš Kučera"]
    assert body["answer"]["document"] == "content/posts/2022-02-01-tomas-1.md"


@pytest.mark.parametrize(("question", "count", "language"), [
    ("Kolik článků napsala Jana Dvořáková?", 13, "cs"),
    ("Co všechno napsal tkuc?", 2, "cs"),
    ("Čo všetko napísala Jana Dvořáková?", 13, "sk"),
    ("What did Tomáš Kučera write?", 2, "en"),
    ("How many posts did jadv write?", 13, "en"),
    ("Welche Artikel hat jadv geschrieben?", 13, "de"),
    ("Wie viele Beiträge hat Tomáš Kučera verfasst?", 2, "de"),
])
def test_natural_phrasings_of_an_authors_posts(blog: Any, question: str, count: int, language: str) -> None:
    from query.graph.dispatch import answer_graph

    body = answer_graph(blog, {"query": question})
    assert (body["status"], body["intent"]) == ("ok", "documents_of_author"), question
    assert body["aggregation"]["count"] == count
    assert body["entities"]["language"] == language


def test_german_answer_words(blog: Any) -> None:
    body = _ask(blog, "Welche Artikel hat jadv geschrieben?")
    assert body["answer"].startswith("Anzahl: 13. [S1] „Zápisky")
    assert "(Autor: Jana Dvořáková)" in body["answer"] and "Und 3 weitere." in body["answer"]
    assert _unsupported(blog, body) == []


@pytest.mark.parametrize(("question", "tags"), [
    ("Jaké štítky má článek Příručka řízení státních IT projektů?", ["it", "stat"]),
    ("Which tags does the post Jak psát srozumitelně pro úřady have?", ["psani"]),
])
def test_tags_of_a_post(blog: Any, question: str, tags: list[str]) -> None:
    from query.graph.dispatch import answer_graph

    body = answer_graph(blog, {"query": question})
    assert (body["status"], body["intent"]) == ("ok", "tags_of_document"), question
    assert body["answer"]["tags"] == tags
    answered = _ask(blog, question)
    assert answered["engine"] == "graph" and all(t in answered["answer"] for t in tags)
    assert _unsupported(blog, answered) == []


@pytest.mark.parametrize(("question", "status", "reason"), [
    ("Kdo napsal příručku o pěstování rajčat?", "no_answer", "unknown_page"),
    ("Who wrote the post Neexistující článek?", "no_answer", "unknown_page"),
    ("Wer hat den Artikel über Tomaten geschrieben?", "no_answer", "unknown_page"),
    ("Kdo napsal Zápisky z dobrovolnického víkendu?", "ambiguous", "ambiguous_page"),  # 13 titles begin so
    # a quoted title that only begins with a page's whole title names another, unknown page
    ("Kdo napsal „Jak psát srozumitelně pro úřady a obce“?", "no_answer", "unknown_page"),
    ("Kolik článků napsal Jan Novák?", "no_answer", "unknown_person"),
    # tags are front matter: a post described, not named by a title, is refused rather than searched
    ("Jakými štítky je označený ten článek o pěstování rajčat?", "no_answer", "unknown_page"),
])
def test_author_questions_the_graph_cannot_place_are_refused(blog: Any, question: str, status: str,
                                                             reason: str) -> None:
    """A question for a post's author whose post matches no title (or several) is refused with the
    contract's reason, never answered from some page's text."""
    body = _ask(blog, question)
    assert (body["status"], body["reason"], body["engine"]) == (status, reason, "graph"), question
    assert body["answer"] is None


def test_a_list_of_persons_is_shown_whole(blog: Any) -> None:
    """Persons are the answer itself (students of a year, authors with a tag): never summed up."""
    from query.answer.graph_phrasing import GraphPhrasing

    claims = [{"text": "Počet: 12.", "source_ids": ["S1"]}] + [
        {"text": f"Osoba {i}: tagy x.", "source_ids": [f"S{i}"]} for i in range(1, 13)]
    persons = GraphPhrasing({"intent": "persons_with_tag", "entities": {"language": "sk"}}).text(claims)
    assert all(f"Osoba {i}:" in persons for i in range(1, 13)) and "ďalšie" not in persons
    documents = GraphPhrasing({"intent": "documents_with_tag", "entities": {"language": "sk"}}).text(claims)
    assert "Osoba 11:" not in documents and documents.endswith("A ďalšie 2. [S11][S12]")

"""Route to the graph only what the graph can hold (issue 22 item 6): a capitalised word that names
nobody and nothing the graph has is not an unknown person, and a question whose words the graph does
not explain goes to the text.  A small German and English handbook (real Git, ladybug, hash embedder)."""

from __future__ import annotations

from typing import Any

import pytest

from indexer.build import build_bundle
from query.bundle import open_bundle
from query.graph.dispatch import answer_graph
from tests.conftest import RepoBuilder
from tests.query.answer_fixtures import ask_extractive


def page(title: str, body: str, **front: Any) -> str:
    lines = [f"title: {title}"] + [f"{k}: {v}" for k, v in front.items()]
    return "---\n" + "\n".join(lines) + f"\n---\n\n# {title}\n\n{body}\n"


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> Any:
    tmp = tmp_path_factory.mktemp("routing")
    repo = RepoBuilder(tmp / "repo")
    repo.write("de/server.md", page("Server", "Der Server ist in Go geschrieben. Er läuft auf Port 8080.",
                                    author="Anna Berg", tags="[backend]"))
    repo.write("de/hotfix.md", page("Hotfix-Prozess", "Den Hotfix-Prozess leitet das Release-Team.",
                                    author="Anna Berg"))
    repo.write("de/urlaub.md", page("Urlaub", "Alle haben Anspruch auf 28 Urlaubstage pro Jahr.", author="Anna Berg"))
    repo.write("sk/eva-novakova.md", page("Eva Nováková", "**Názov:** Vyhľadávanie v slovenských textoch",
                                          author="Anna Berg"))
    repo.write("en/deploy.md", page("Deploy Guide", "Deploys run from the main branch with Kubernetes.",
                                    author="Mary Jones", tags="[ops]"))
    result = build_bundle(repo.path, tmp / "store", repo.commit("docs"), embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    yield bundle
    bundle.close()


@pytest.mark.parametrize("question", [
    "In welcher Programmiersprache ist der Server geschrieben?",  # "Server" is a page, "geschrieben" an author word
    "Who is responsible for Grafana?",  # a thing nobody's pages name, asked with "who"
    "Was macht Kubernetes?",
    "Welche Java-Version wird benötigt?",
    # a capitalised noun the pages use, in a count question with a year word: no person slot it could fill
    "Wie viele Urlaubstage gibt es pro Jahr?",
])
def test_a_name_that_resolves_to_nothing_goes_to_the_text(docs: Any, question: str) -> None:
    body = answer_graph(docs, {"query": question})
    assert (body["status"], body["reason"]) == ("no_answer", "unsupported_question"), question
    # a page the question names by its title restricts the text to that page
    engine = "graph+text" if body["entities"]["pages"] else "text"
    assert ask_extractive(docs, question)["engine"] == engine, question


def test_a_page_named_by_an_inflected_title_restricts_the_text(docs: Any) -> None:
    # the title "Eva Nováková" in a Slovak case form: the page is what the question is about, not a person
    # nobody has, and its text answers
    question = "Aký je názov diplomovej práce Evy Novákovej?"
    body = answer_graph(docs, {"query": question})
    assert [p["path"] for p in body["entities"]["pages"]] == ["sk/eva-novakova.md"]
    assert body["reason"] != "unknown_person"
    answer = ask_extractive(docs, question)
    assert answer["engine"] == "graph+text"
    assert {s["document_path"] for s in answer["sources"]} <= {"sk/eva-novakova.md"}


@pytest.mark.parametrize("question", ["Which pages did Peter Lukáč write?",
                                      "Welche Seiten hat Peter Lukáč geschrieben?"])
def test_unknown_person_only_when_the_question_is_about_a_person(docs: Any, question: str) -> None:
    body = answer_graph(docs, {"query": question})
    assert (body["status"], body["reason"]) == ("no_answer", "unknown_person"), question


@pytest.mark.parametrize(("question", "intent"), [
    ("Who wrote the Deploy Guide?", "author_of_document"),
    ("Welche Artikel hat Anna Berg geschrieben?", "documents_of_author"),
    ("Which documents are tagged backend?", "documents_with_tag"),
])
def test_questions_whose_slots_resolve_stay_with_the_graph(docs: Any, question: str, intent: str) -> None:
    body = answer_graph(docs, {"query": question})
    assert (body["status"], body["intent"]) == ("ok", intent), question
    assert ask_extractive(docs, question)["engine"] == "graph", question


@pytest.fixture(scope="module")
def product_docs(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> Any:
    tmp = tmp_path_factory.mktemp("product")
    repo = RepoBuilder(tmp / "repo")
    repo.write("docs/plus.md", page("Foobar+", "Foobar+ is the paid model service of Foobar. Set FOOBAR_PLUS_KEY."))
    repo.write("docs/network.md", page("Network", "The Foobar Web UI uses port 8971. "
                                                  "Foobar also serves RTSP on port 8554."))
    repo.write("docs/install.md", page("Installation", "Foobar runs in Docker. Mount the Foobar config folder."))
    repo.write("docs/record.md", page("Recording", "Foobar keeps recordings for 10 days by default."))
    result = build_bundle(repo.path, tmp / "store", repo.commit("docs"), embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    yield bundle
    bundle.close()


def test_the_sites_own_name_does_not_restrict_the_text_to_the_page_titled_with_it(product_docs: Any) -> None:
    # "Foobar" is on every page: the page "Foobar+" (which the graph finds by the folded title) is not what
    # "Which port does the Foobar Web UI use?" is about, and the text is not restricted to it
    question = "Which port does the Foobar Web UI use?"
    body = answer_graph(product_docs, {"query": question})
    assert (body["status"], body["reason"]) == ("no_answer", "unsupported_question")
    assert [p["path"] for p in body["entities"]["pages"]] == ["docs/plus.md"]
    answer = ask_extractive(product_docs, question)
    assert answer["engine"] == "text"
    assert "docs/network.md" in {s["document_path"] for s in answer["sources"]}, answer

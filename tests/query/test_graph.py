"""Graph retrieval on real bundles of a tiny thesis wiki (real Git, ladybug; hash embedder)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from artifacts.graphmap import PRESETS
from indexer.build import build_bundle
from query.bundle import OpenedBundle, open_bundle
from query.cli.bundle_at import bundle_dir_at
from query.cli.graph import graph_command, graph_export_command
from query.errors import InvalidQueryError, InvalidRequestError
from query.graph.dispatch import answer_graph
from query.graph.names import damerau1, name_forms
from tests.conftest import RepoBuilder


def student(name: str, categories: str, sections: str, *, tags: str = "nlp", published: bool = True) -> str:
    return (
        f"---\ntitle: {name}\npublished: {'true' if published else 'false'}\ntaxonomy:\n"
        f"    category: [{categories}]\n    tag: [{tags}]\n    author: Daniel Hládek\n---\n\n"
        f"# {name}\n\nVedúci práce: Ing. Daniel Hládek, PhD.\n\n{sections}"
    )


HOLP = student("Ján Holp", "dp2021, bp2019, st2016",
               "## Bakalárska práca 2019\n\nNázov: Prepis súdnych nahrávok\n\n"
               "## Diplomová práca\n\nZadanie:\n\n1. Vypracujte prehľad.\n", tags="asr, nlp")
KOVAC_1 = student("Martin Kováč", "bp2018, st2015", "## Bakalárska práca 2018\n\nNázov: Kvantizácia modelov\n")
KOVAC_2 = student("Martin Kováč", "bp2023, st2020", "## Bakalárska práca 2023\n\nNázov práce: Anotácia korpusu\n")
VERESOVA = student("Ivana Verešová", "bp2020, st2017", "## Bakalárska práca (2020)\n\n*Názov*: Detekcia prejavov\n",
                   tags="nlp, bert")
MALA = student("Eva Malá", "bp2021, st2018", "## Bakalárska práca\n\nNázov: Skrytá práca\n", published=False)
PEOPLE = "---\ntitle: Ľudia\n---\n\n# Ľudia\n\n- [Ján Holp](../students/2016/jan_holp/README.md)\n"
KOVAC_HIDDEN = student("Martin Kováč", "bp2024, st2021", "## Bakalárska práca\n\nNázov: Tajná práca\n", published=False)
DRAFT = ("---\ntitle: Tajný koncept\npublished: false\ntaxonomy:\n    tag: [tajne]\n---\n\n# Tajný koncept\n\n"
         "[Holp](../students/2016/jan_holp/README.md), [Ľudia](../people/README.md)\n")


def write_wiki(repo: RepoBuilder) -> None:
    repo.write("graph-schema.yaml", PRESETS["thesis-wiki"])
    repo.write("pages/students/2016/jan_holp/README.md", HOLP)
    repo.write("pages/students/2015/martin_kovac/README.md", KOVAC_1)
    repo.write("pages/students/2020/martin_kovac/README.md", KOVAC_2)
    repo.write("pages/students/2017/ivana_veresova/README.md", VERESOVA)
    repo.write("pages/students/2018/eva_mala/README.md", MALA)
    repo.write("pages/people/README.md", PEOPLE)
    repo.write("pages/students/2021/martin_kovac/README.md", KOVAC_HIDDEN)
    repo.write("pages/drafts/README.md", DRAFT)


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> dict[str, Any]:
    """Two commits: the wiki, then Verešová's page deleted and Holp's page renamed."""
    tmp = tmp_path_factory.mktemp("graphwiki")
    repo = RepoBuilder(tmp / "repo")
    write_wiki(repo)
    first = repo.commit("wiki")
    store = tmp / "store"
    bundle_1 = build_bundle(repo.path, store, first, embedder=hash_embedder)
    repo.remove("pages/students/2017/ivana_veresova/README.md")
    repo.remove("pages/students/2016/jan_holp/README.md")
    repo.write("pages/students/2016/holp_jan/README.md", HOLP)
    second = repo.commit("delete and rename")
    bundle_2 = build_bundle(repo.path, store, second, embedder=hash_embedder)
    opened = {
        "first": open_bundle(bundle_1.bundle_path, verify=False, load_model=False),
        "second": open_bundle(bundle_2.bundle_path, verify=False, load_model=False),
    }
    yield {"store": store, "repo": repo, "first_commit": first, "second_commit": second,
           "results": (bundle_1, bundle_2), **opened}
    for bundle in opened.values():
        bundle.close()


def ask(bundle: OpenedBundle, question: str, **extra: Any) -> dict[str, Any]:
    return answer_graph(bundle, {"question": question, **extra})


def test_repository_mapping_file_is_used_and_recorded(wiki: dict[str, Any]) -> None:
    manifest = wiki["results"][0].manifest
    assert manifest.config.graph_mapping["name"] == "thesis-wiki"
    assert manifest.counts.nodes["Work"] == 7  # an unpublished page's work is in the graph, hidden at query time
    assert manifest.model_extra["graph_mapping_choice"] == {
        "name": "thesis-wiki", "source": "repository_file", "reason": "graph-schema.yaml at the root of the commit"}


@pytest.mark.parametrize("question", [
    "Aký názov má bakalárska práca Jána Holpa?",
    "Aky nazov ma bakalarska praca Jana Holpa?",
    "Ako sa volá bakalárka, ktorú robil Holp Ján?",
    "Aký názov má bakalárska práca, ktorú Jánovi Holpovi schválili?",
])
def test_inflected_and_diacritics_free_names(wiki: dict[str, Any], question: str) -> None:
    body = ask(wiki["first"], question)
    assert body["status"] == "ok", body
    assert body["answer"]["person"] == "Ján Holp"
    assert body["answer"]["titles"] == ["Prepis súdnych nahrávok"]
    assert body["answer"]["years"] == [2019]
    assert body["sources"][0]["document_path"] == "pages/students/2016/jan_holp/README.md"
    assert body["facts"][0]["source_id"] == "S1"


def test_feminine_cases_and_a_typo(wiki: dict[str, Any]) -> None:
    for question in ("Kedy obhájila Ivana Verešová bakalársku prácu?",
                     "V ktorom roku mala bakalársku prácu Ivany Verešovej?",
                     "Kedy obhájila Ivana Verešvoá bakalársku prácu?"):
        body = ask(wiki["first"], question)
        assert (body["status"], body["answer"]["person"], body["answer"]["years"]) == ("ok", "Ivana Verešová", [2020])


def test_supervisor_is_not_the_student(wiki: dict[str, Any]) -> None:
    body = ask(wiki["first"], "Aké práce má Daniel Hládek a v ktorých rokoch?")
    assert (body["status"], body["reason"]) == ("no_answer", "unknown_person")
    assert body["entities"]["document_authors"] == ["Daniel Hládek"]
    assert body["facts"] == [] and body["sources"] == []
    holp = ask(wiki["first"], "Aké práce má Ján Holp?")
    assert {f["subject"] for f in holp["facts"]} == {"Ján Holp"}


def test_two_students_with_the_same_name(wiki: dict[str, Any]) -> None:
    body = ask(wiki["first"], "Aké práce má Martin Kováč a v ktorých rokoch?")
    assert (body["status"], body["reason"]) == ("ambiguous", "ambiguous_person")
    assert [(c["path"], c["start_year"], c["works"]) for c in body["candidates"]] == [
        ("pages/students/2015/martin_kovac/README.md", 2015, [{"type": "bp", "year": 2018,
                                                              "title": "Kvantizácia modelov"}]),
        ("pages/students/2020/martin_kovac/README.md", 2020, [{"type": "bp", "year": 2023,
                                                              "title": "Anotácia korpusu"}]),
    ]
    narrowed = ask(wiki["first"], "Aký názov má bakalárska práca Martina Kováča, ktorý začal študovať v roku 2020?")
    assert narrowed["status"] == "ok" and narrowed["answer"]["titles"] == ["Anotácia korpusu"]


def test_work_without_a_title_is_kept(wiki: dict[str, Any]) -> None:
    body = ask(wiki["first"], "Aké práce má Ján Holp?")
    assert body["answer"]["works"] == [
        {"type": "bp", "type_label": "Bakalárska práca", "year": 2019, "title": "Prepis súdnych nahrávok"},
        {"type": "dp", "type_label": "Diplomová práca", "year": 2021, "title": None},
    ]
    assert body["answer"]["titles"] == ["Prepis súdnych nahrávok"]
    assert body["facts"][1]["object"]["title_missing"] is True
    # the work exists but its page gives no title: the title question is not answered `ok`
    title = ask(wiki["first"], "Aký názov má diplomová práca Jána Holpa?")
    assert (title["status"], title["reason"]) == ("no_answer", "no_matching_sources")
    assert (title["answer"]["titles"], title["answer"]["title_missing"], title["answer"]["years"]) == ([], True, [2021])


def test_year_with_no_works_is_a_zero_count(wiki: dict[str, Any]) -> None:
    body = ask(wiki["first"], "Koľko študentov malo nejakú prácu v roku 2012?")
    assert body["status"] == "ok" and body["complete"] is True
    assert body["answer"]["count"] == 0 and body["answer"]["persons"] == []
    assert body["aggregation"] == {"count": 0, "complete": True}


def test_truncation_keeps_counts_exact(wiki: dict[str, Any]) -> None:
    full = ask(wiki["first"], "Kto robil bakalársku prácu?")
    assert full["answer"]["count"] == 4  # Eva Malá is unpublished
    assert full["truncated"] is False and full["complete"] is True
    cut = ask(wiki["first"], "Kto robil bakalársku prácu?", limit=1)
    assert cut["answer"]["count"] == 4 and len(cut["answer"]["persons"]) == 1
    assert cut["aggregation"] == {"count": 4, "complete": True}
    assert (cut["truncated"], cut["truncation_reasons"], cut["complete"]) == (True, ["entity_limit"], False)
    year = ask(wiki["first"], "Ktorí študenti mali bakalársku prácu v roku 2018?")
    assert year["answer"]["persons"] == ["Martin Kováč"] and year["answer"]["count"] == 1


def test_unpublished_person_exists_only_on_request(wiki: dict[str, Any]) -> None:
    assert ask(wiki["first"], "Aké práce má Eva Malá?")["reason"] == "unknown_person"
    body = ask(wiki["first"], "Aké práce má Eva Malá?", published_only=False)
    assert body["status"] == "ok" and body["answer"]["works"][0]["title"] == "Skrytá práca"


def test_common_tags_content_and_unsupported(wiki: dict[str, Any]) -> None:
    tags = ask(wiki["first"], "Ktoré tagy majú spoločné Ján Holp a Ivana Verešová?")
    assert tags["status"] == "ok" and tags["answer"]["tags"] == ["nlp"]
    assert tags["aggregation"] == {"count": 1, "complete": True}
    unknown = ask(wiki["first"], "Ktoré tagy majú spoločné Ján Holp a Peter Neznámy?")
    assert unknown["reason"] == "unknown_person"
    content = ask(wiki["first"], "Aké sú body zadania diplomovej práce Jána Holpa?")
    assert (content["status"], content["reason"], content["suggested_endpoint"]) == (
        "no_answer", "unsupported_question", "/search")
    assert ask(wiki["first"], "Aké je počasie?")["reason"] == "unsupported_question"


def test_links_to_a_page(wiki: dict[str, Any]) -> None:
    body = ask(wiki["first"], "Na ktoré stránky odkazuje Ľudia?")
    assert body["intent"] == "links_from"
    assert body["answer"]["documents"] == ["pages/students/2016/jan_holp/README.md"]


def test_deleted_and_renamed_pages_disappear(wiki: dict[str, Any], hash_embedder: Any, tmp_path: Path) -> None:
    assert ask(wiki["second"], "Aké práce má Ivana Verešová?")["reason"] == "unknown_person"
    holp = ask(wiki["second"], "Aké práce má Ján Holp?")
    assert holp["answer"]["path"] == "pages/students/2016/holp_jan/README.md"
    assert {s["document_path"] for s in holp["sources"]} == {"pages/students/2016/holp_jan/README.md"}
    assert ask(wiki["first"], "Aké práce má Ivana Verešová?")["status"] == "ok"  # the old bundle still knows her
    scratch = build_bundle(wiki["repo"].path, tmp_path / "scratch", wiki["second_commit"], embedder=hash_embedder)
    assert scratch.manifest.digests["graph"] == wiki["results"][1].manifest.digests["graph"]


def test_request_validation(wiki: dict[str, Any]) -> None:
    with pytest.raises(InvalidQueryError):
        answer_graph(wiki["first"], {"question": "  "})
    with pytest.raises(InvalidRequestError):
        answer_graph(wiki["first"], {"question": "x", "limit": 0})
    with pytest.raises(InvalidRequestError):
        answer_graph(wiki["first"], {"question": "x", "unknown": 1})


def test_cli_at_and_export(wiki: dict[str, Any]) -> None:
    store = str(wiki["store"])
    assert bundle_dir_at(store, wiki["first_commit"][:10]) == wiki["results"][0].bundle_path
    assert bundle_dir_at(store, wiki["results"][0].bundle_id) == wiki["results"][0].bundle_path
    runner = CliRunner()
    result = runner.invoke(graph_command, ["Aké práce má Ivana Verešová?", "--store", store,
                                           "--at", wiki["first_commit"][:10], "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["answer"]["person"] == "Ivana Verešová"
    missing = runner.invoke(graph_command, ["x", "--store", store, "--at", "deadbeef", "--json"])
    assert missing.exit_code == 1 and json.loads(missing.output)["reason"] in ("bundle_not_found", "unknown_revision")
    # the one revision syntax of `gitrag use` and HTTP `at`: REV~N and branch names resolve too
    older = runner.invoke(graph_command, ["Aké práce má Ivana Verešová?", "--store", store,
                                          "--at", "main~1", "--json"])
    assert older.exit_code == 0, older.output
    assert json.loads(older.output)["answer"]["person"] == "Ivana Verešová"
    unknown = runner.invoke(graph_command, ["x", "--store", store, "--at", "no-such-branch", "--json"])
    assert unknown.exit_code == 1 and json.loads(unknown.output)["reason"] == "unknown_revision"
    malformed = runner.invoke(graph_command, ["x", "--store", store, "--at", "main\n", "--json"])
    assert malformed.exit_code == 1 and json.loads(malformed.output)["reason"] == "invalid_at"
    exported = runner.invoke(graph_export_command, ["--store", store, "--format", "json"])
    graph = json.loads(exported.output)
    assert "Person:pages/students/2016/holp_jan/README.md" in {n["id"] for n in graph["nodes"]}
    graphml = runner.invoke(graph_export_command, ["--store", store, "--format", "graphml"])
    root = ET.fromstring(graphml.output)
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    assert len(root.findall(".//g:node", ns)) == len(graph["nodes"])
    assert len(root.findall(".//g:edge", ns)) == len(graph["edges"])
    # graph-export names the same reasons as `graph` and HTTP, not a bare engine or click error
    bad = runner.invoke(graph_export_command, ["--store", store, "--at", "no-such-branch"])
    assert bad.exit_code == 1 and "unknown_revision" in bad.output
    bad = runner.invoke(graph_export_command, ["--store", store, "--at", "main\n"])
    assert bad.exit_code == 1 and "invalid_at" in bad.output


def test_name_forms_and_typos() -> None:
    assert {"jána", "jánovi"} <= name_forms("Ján")
    assert {"verešovej", "verešovú", "verešovou"} <= name_forms("Verešová")
    assert {"marka", "mareka"} <= name_forms("Marek")
    assert {"lucie", "luciou"} <= name_forms("Lucia")
    assert {"záhorského", "záhorskému"} <= name_forms("Záhorský")
    assert damerau1("simkova", "smikova") and damerau1("holp", "holpa") and not damerau1("holp", "hlopa")


def test_graph_request_rejects_lone_surrogates_and_names_bad_fields() -> None:
    from query.errors import InvalidQueryError, InvalidRequestError
    from query.graph.request import parse_graph_request

    with pytest.raises(InvalidQueryError):
        parse_graph_request({"question": "Kto je \ud800?"})
    with pytest.raises(InvalidRequestError) as info:
        parse_graph_request({"question": "Kto?", "limit": 0})
    assert [f["field"] for f in info.value.fields] == ["limit"]


def test_published_only_hides_unpublished_pages_everywhere(wiki: dict[str, Any]) -> None:
    """Issue 12: an unpublished page's path, title and links never show through /graph."""
    hidden = ("pages/drafts/README.md", "Tajný koncept", "pages/students/2021/martin_kovac/README.md", "Tajná")
    asked = [
        ask(wiki["first"], "Ktoré stránky odkazujú na stránku Jána Holpa?"),
        ask(wiki["first"], "Na ktoré stránky odkazuje Tajný koncept?"),
        ask(wiki["first"], "Kto má tag tajne?"),
        ask(wiki["first"], "Aké práce má Martin Kováč?"),  # two published namesakes, one hidden
        ask(wiki["first"], "Kto robil bakalársku prácu v roku 2024?"),
        ask(wiki["first"], "Kto začal študovať v roku 2021?"),
    ]
    for body in asked:  # the question's own words (query echo, unknown names) aside
        shown = {k: v for k, v in body.items() if k not in ("query", "question")}
        shown["entities"] = {k: v for k, v in body["entities"].items() if k != "unknown_names"}
        text = json.dumps(shown, ensure_ascii=False)
        assert not any(h in text for h in hidden), text
    links, draft, tag, kovac, year, started = asked
    assert links["status"] == "ok" and links["intent"] == "links_to"
    assert links["answer"]["documents"] == ["pages/people/README.md"]
    assert (draft["status"], draft["reason"]) == ("no_answer", "unknown_page")
    assert tag["status"] != "ok"
    assert len(kovac["candidates"]) == 2
    assert year["answer"]["count"] == 0 and started["answer"]["count"] == 0
    # with published_only=false the same questions see the unpublished pages
    everything = ask(wiki["first"], "Ktoré stránky odkazujú na stránku Jána Holpa?", published_only=False)
    assert everything["answer"]["documents"] == ["pages/drafts/README.md", "pages/people/README.md"]
    outgoing = ask(wiki["first"], "Na ktoré stránky odkazuje Tajný koncept?", published_only=False)
    assert outgoing["intent"] == "links_from" and len(outgoing["answer"]["documents"]) == 2
    assert len(ask(wiki["first"], "Aké práce má Martin Kováč?", published_only=False)["candidates"]) == 3


def test_query_field_with_question_as_alias(wiki: dict[str, Any]) -> None:
    by_query = answer_graph(wiki["first"], {"query": "Aké práce má Ján Holp?"})
    by_question = ask(wiki["first"], "Aké práce má Ján Holp?")
    assert by_query["answer"] == by_question["answer"] and by_query["status"] == "ok"
    assert by_query["query"] == by_query["question"] == "Aké práce má Ján Holp?"
    with pytest.raises(InvalidRequestError) as both:
        answer_graph(wiki["first"], {"query": "Aké práce má Ján Holp?", "question": "x"})
    assert [f["field"] for f in both.value.fields] == ["query"]
    with pytest.raises(InvalidQueryError):
        answer_graph(wiki["first"], {"limit": 5})


@pytest.mark.parametrize("question", [
    "Aký e-mail má Ján Holp?",                      # an attribute the graph does not have
    "Akú známku dostal Ján Holp za bakalársku prácu?",  # a work named, but not what is asked
    "Koľko rokov má Ján Holp?",                     # count and year words, no work
    "What is Ján Holp's phone number?",
    "Kolik je Janu Holpovi let?",
])
def test_questions_not_understood_keep_the_entities(wiki: dict[str, Any], question: str) -> None:
    body = ask(wiki["first"], question)
    assert (body["status"], body["reason"], body["suggested_endpoint"]) == (
        "no_answer", "unsupported_question", "/search")
    assert body["facts"] == [] and body["answer"] is None
    assert [(p["name"], p["path"]) for p in body["entities"]["persons"]] == [
        ("Ján Holp", "pages/students/2016/jan_holp/README.md")]


def test_intent_words_are_matched_outside_names(wiki: dict[str, Any]) -> None:
    # "Kolková" starts like "koľko", "Rokos" like "rok": names never feed the intent
    tags = ask(wiki["first"], "Aké tagy má Ivana Verešová?")
    assert (tags["intent"], tags["answer"]["tags"]) == ("tags_of_person", ["bert", "nlp"])
    possessive = ask(wiki["first"], "What is the title of Ján Holp's bachelor's thesis?")
    assert possessive["status"] == "ok" and possessive["answer"]["titles"] == ["Prepis súdnych nahrávok"]
    started = ask(wiki["first"], "Which students started in 2016?")
    assert (started["intent"], started["answer"]["persons"]) == ("persons_started", ["Ján Holp"])
    supervisor = ask(wiki["first"], "Kto viedol bakalársku prácu Jána Holpa?")
    assert supervisor["answer"]["supervisors"] == ["Daniel Hládek"]


def test_supervised_works_and_documents_with_a_tag(wiki: dict[str, Any]) -> None:
    supervised = ask(wiki["first"], "Aké práce viedol Daniel Hládek?")
    assert (supervised["status"], supervised["intent"]) == ("ok", "supervised_by")
    assert supervised["answer"]["persons"] == ["Ivana Verešová", "Ján Holp", "Martin Kováč", "Martin Kováč"]
    assert supervised["answer"]["count"] == supervised["aggregation"]["count"] == 4  # Eva Malá is unpublished
    pages = ask(wiki["first"], "Ktoré stránky majú tag bert?")
    assert (pages["intent"], pages["answer"]["documents"]) == (
        "documents_with_tag", ["pages/students/2017/ivana_veresova/README.md"])
    persons = ask(wiki["first"], "Kto má tag bert?")
    assert (persons["intent"], persons["answer"]["persons"]) == ("persons_with_tag", ["Ivana Verešová"])


def test_a_named_thing_the_pages_mention_is_no_unknown_person(tmp_path: Path, hash_embedder) -> None:  # type: ignore[no-untyped-def]
    """A new user's "Co je Jehlomat?" on a blog was refused as unknown_person, so /answer never looked
    at the post about Jehlomat. A capitalised name the pages mention, in a question without person
    words, goes to the text (unsupported_question); so does "Co je X?" about a name no page mentions (it
    asks what a thing is, never who: the text refuses it for lack of evidence). A person question about a
    name no published page mentions stays refused as unknown_person."""
    repo = RepoBuilder(tmp_path / "blog")
    repo.write("posts/jehlomat.md", "---\ntitle: Předání projektu\nauthor: Petra Malá\n---\n"
                                    "Jehlomat je aplikace pro hlášení nalezených stříkaček. Česko.Digital ji předalo "
                                    "organizaci Magdaléna.\n")
    repo.write("posts/tajne.md", "---\ntitle: Interní\npublished: false\n---\nKarel Gott zpíval na večírku.\n")
    repo.commit("posts")
    result = build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, load_model=False)
    try:
        for question in ("Co je Jehlomat?", "Které organizaci Česko.Digital předalo projekt Jehlomat?",
                         "Co je Zlatomat?", "What is Zlatomat?", "Was ist Zlatomat?", "Čo je Nový Zlatomat?"):
            assert ask(bundle, question)["reason"] == "unsupported_question", question
        for question in ("Co dělá Karel Gott?", "Kdo je Jan Novák?", "Kdo je Karel Gott?", "Who is Zlatomat?"):
            assert ask(bundle, question)["reason"] == "unknown_person", question  # no published page names them
        assert ask(bundle, "Co dělá Karel Gott?", published_only=False)["reason"] == "unsupported_question"
        assert ask(bundle, "Kdo je Karel Gott?", published_only=False)["reason"] == "unsupported_question"
        # people or numbers asked about a thing the pages name: the text answers, no person is unknown
        for question in ("Proč Česko.Digital předalo Jehlomat?", "Kdo po Česko.Digital převzal Jehlomat?",
                         "Kolik lidí pracovalo na Jehlomat?"):
            assert ask(bundle, question)["reason"] == "unsupported_question", question
    finally:
        bundle.close()

"""Structure questions: persons or documents selected by front matter or links.

Only the graph answers them ("Ktorí študenti majú tag X?", "Kto má kategóriu dr2018?", "Ktorých
študentov viedla X?"); a question of that kind the graph did not understand is refused by ``/answer``
(``unsupported_question``), never answered by a text sentence that names none of the asked persons.

A small thesis wiki and a small blog are written here as real Git repositories, built with the
hash embedder, and asked through :func:`query.answer.pipeline.answer` (and ``/graph``'s
:func:`query.graph.dispatch.answer_graph`).  Expected names and counts come from the files written here.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from artifacts.graphmap import PRESETS
from tests.conftest import RepoBuilder


def _student(name: str, categories: str, supervisor: str, *, tags: str = "nlp", published: bool = True,
             body: str = "") -> str:
    return (f"---\ntitle: {name}\npublished: {'true' if published else 'false'}\ntaxonomy:\n"
            f"    category: [{categories}]\n    tag: [{tags}]\n    author: {supervisor}\n---\n\n"
            f"# {name}\n\nTéma: [Analýza sentimentu](../../../topics/sentiment/README.md)\n\n{body}")


# name, folder, categories, supervisor as the page writes it, tags, published
STUDENTS = [
    ("Patrik Hric", "2013/patrik_hric", "bp2015, st2013", "Eva Kolárová", "sentiment, nlp", True),
    ("Nikola Čižmárová", "2014/nikola_cizmarova", "bp2016, dr2018, st2014", "Eva Kolárová", "sentiment", True),
    ("Juraj Molnár", "2022/juraj_molnar", "bp2024, st2022", "Eva Kolarova", "asr", True),
    ("Andrea Jančová", "2022/andrea_jancova", "bp2024, st2022", "Eva Kolárová", "asr", True),
    ("Michal Baran", "2022/michal_baran", "bp2024, st2022", "Eva Kolárová", "llm", False),
    ("Boris Lipták", "2013/boris_liptak", "bp2015, st2013", "Daniel Hládek", "ocr-like", True),
]
TOPIC = ("---\ntitle: Analýza sentimentu\npublished: true\ntaxonomy:\n    category: [tema]\n    tag: [sentiment]\n"
         "    author: Daniel Hládek\n---\n\n# Analýza sentimentu\n\nTáto stránka zhromažďuje práce o analýze "
         "sentimentu. Nástroje, ktoré študenti najčastejšie používajú: spaCy a Hugging Face Transformers.\n\n"
         "## Študenti\n\n- [Patrik Hric](../../students/2013/patrik_hric/README.md) – Bakalárska práca 2015\n"
         "- [Nikola Čižmárová](../../students/2014/nikola_cizmarova/README.md) – Dizertačná práca 2018\n\n"
         "## Súvisiace témy\n\n- [Rozpoznávanie reči](../asr/README.md)\n")
ASR = ("---\ntitle: Rozpoznávanie reči\npublished: true\ntaxonomy:\n    category: [tema]\n    tag: [asr]\n"
       "    author: Daniel Hládek\n---\n\n# Rozpoznávanie reči\n\nPráce o prepise reči.\n")
GUIDE = ("---\ntitle: Návod\n---\n\n# Návod pre vedúcich\n\n"
         "Do hlavičky stránky (front matter) vedúci práce zapíše title (meno študenta), taxonomy.category "
         "a taxonomy.tag. Kategórie majú tvar typ + rok: dr2018 je dizertačná práca z roku 2018, tp2020 je "
         "tímový projekt z roku 2020. Tag sentiment dostane každý študent, ktorý robí analýzu sentimentu.\n")


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> Any:
    root = tmp_path_factory.mktemp("graph-structure")
    repo = RepoBuilder(root / "repo")
    repo.write("graph-schema.yaml", PRESETS["thesis-wiki"])
    for name, folder, categories, supervisor, tags, published in STUDENTS:
        repo.write(f"pages/students/{folder}/README.md",
                   _student(name, categories, supervisor, tags=tags, published=published))
    repo.write("pages/topics/sentiment/README.md", TOPIC)
    repo.write("pages/topics/asr/README.md", ASR)
    repo.write("pages/navody/README.md", GUIDE)
    bundle = _build_and_open(repo, root, "wiki", hash_embedder)
    yield bundle
    bundle.close()


def _build_and_open(repo: RepoBuilder, root: Any, message: str, embedder: Any) -> Any:
    """Commit ``repo``, build its bundle into ``root / "store"`` with ``embedder`` and open it."""
    from indexer.build import build_bundle
    from query.bundle import open_bundle

    result = build_bundle(repo.path, root / "store", repo.commit(message), embedder=embedder)
    return open_bundle(result.bundle_path, verify=False, embedder=embedder)


def _ask(bundle: Any, question: str, **fields: Any) -> dict[str, Any]:
    from query.answer.generators import ExtractiveGenerator
    from query.answer.pipeline import answer, parse_answer_request
    from query.search.request import SearchOptions

    return asyncio.run(answer(bundle, parse_answer_request({"query": question, **fields}), SearchOptions(),
                              ExtractiveGenerator()))


def _graph(bundle: Any, question: str, **fields: Any) -> dict[str, Any]:
    from query.graph.dispatch import answer_graph

    return answer_graph(bundle, {"question": question, **fields})


def test_students_with_a_tag_in_the_header(wiki: Any) -> None:
    # "v hlavičke" (in the front matter) says where the tag is, not what is asked
    body = _ask(wiki, "Ktorí študenti majú v hlavičke tag sentiment?")
    assert (body["status"], body["engine"]) == ("ok", "graph"), body
    assert "Patrik Hric" in body["answer"] and "Nikola Čižmárová" in body["answer"]
    assert "Juraj Molnár" not in body["answer"]
    assert "front matter" not in body["answer"]  # never the guide's sentence


@pytest.mark.parametrize("question", [
    "Kto má kategóriu dr2018, teda dizertačnú prácu z roku 2018?",
    "Kto má kategóriu dr2018?",
    "Which students have the category dr2018?",
])
def test_category_value_is_read_with_the_mapping_pattern(wiki: Any, question: str) -> None:
    graph = _graph(wiki, question)
    assert (graph["status"], graph["intent"]) == ("ok", "persons_with_work"), graph
    assert graph["entities"]["work_types"] == ["dr"] and graph["entities"]["years"] == [2018]
    body = _ask(wiki, question)
    assert (body["status"], body["engine"]) == ("ok", "graph")
    assert "Nikola Čižmárová" in body["answer"] and "Patrik Hric" not in body["answer"]


def test_category_nobody_has_is_refused_not_guessed(wiki: Any) -> None:
    body = _ask(wiki, "Which students defended a dissertation in 2017 (category dr2017)?")
    assert body["status"] == "no_answer" and body["engine"] == "graph", body
    assert body["claims"] == []


def test_students_of_a_supervisor_by_start_year(wiki: Any) -> None:
    body = _ask(wiki, "Ktorých študentov, čo začali študovať v roku 2022, viedla Eva Kolárová?")
    assert (body["status"], body["engine"]) == ("ok", "graph"), body
    assert body["answer"].startswith("Počet: 2.")
    assert "Juraj Molnár" in body["answer"] and "Andrea Jančová" in body["answer"]
    assert "Patrik Hric" not in body["answer"]  # started in 2013
    assert "Michal Baran" not in body["answer"]  # published: false


def test_spellings_of_one_supervisor_are_one_person_and_named(wiki: Any) -> None:
    graph = _graph(wiki, "Koľko študentov viedla Eva Kolárová?")
    assert graph["status"] == "ok" and graph["aggregation"]["count"] == 4, graph
    assert graph["answer"]["spellings"] == {"Eva Kolárová": 3, "Eva Kolarova": 1}
    written = [f for f in graph["facts"] if f["predicate"] == "supervised_by" and f.get("as_written")]
    assert [(f["subject"], f["object"], f["as_written"]) for f in written] == \
        [("Juraj Molnár", "Eva Kolárová", "Eva Kolarova")]
    # one supervised_by fact per student, however many works
    assert len([f for f in graph["facts"] if f["predicate"] == "supervised_by"]) == 4
    body = _ask(wiki, "kolko studentov ma ako veduci prace eva kolarova")
    assert body["answer"].startswith("Počet: 4."), body
    assert "Juraj Molnár: vedúci práce Eva Kolárová (Eva Kolarova)." in body["answer"]
    assert "Eva Kolárová, Eva Kolárová" not in body["answer"]
    # the unpublished page counts only when the caller asks for unpublished pages too
    assert _graph(wiki, "Koľko študentov viedla Eva Kolárová?", published_only=False)["aggregation"]["count"] == 5


def test_students_listed_on_a_topic_page(wiki: Any) -> None:
    graph = _graph(wiki, "Ktorí študenti sú uvedení na stránke témy Analýza sentimentu?")
    assert (graph["status"], graph["intent"]) == ("ok", "links_from"), graph
    # the persons the page lists, not the related topic page it also links to
    assert sorted(graph["answer"]["titles"]) == ["Nikola Čižmárová", "Patrik Hric"]
    # asked for pages, every page it links to
    graph = _graph(wiki, "Na ktoré stránky odkazuje stránka Analýza sentimentu?")
    assert "Rozpoznávanie reči" in graph["answer"]["titles"]
    assert "count" not in graph["answer"]
    # asked how many, the answer states the count ("Počet: 2.") before the list
    body = _ask(wiki, "Koľko študentov je uvedených na stránke témy Analýza sentimentu?")
    assert body["status"] == "ok" and body["answer"].startswith("Počet: 2."), body


def test_a_count_of_other_things_listed_on_a_page_is_no_link_answer(wiki: Any) -> None:
    graph = _graph(wiki, "Koľko vedúcich prác je uvedených na stránke Analýza sentimentu?")
    assert graph["status"] != "ok" and graph["intent"] == "unsupported", graph


def test_students_of_a_supervisor_named_only_by_a_possessive(wiki: Any) -> None:
    # "študenti Evy Kolárovej": the supervisor selects the students; never every student of 2022
    graph = _graph(wiki, "Ktorí študenti Evy Kolárovej začali v roku 2022?")
    assert (graph["status"], graph["intent"]) == ("ok", "supervised_by"), graph
    assert sorted(graph["answer"]["persons"]) == ["Andrea Jančová", "Juraj Molnár"]


def test_a_supervisor_the_answer_would_ignore_is_refused(wiki: Any) -> None:
    # tags of a supervisor's students is no template: refused, never the students of the tag alone
    graph = _graph(wiki, "Ktorí študenti Daniela Hládka majú tag sentiment?")
    assert (graph["status"], graph["reason"], graph["intent"]) == ("no_answer", "unsupported_question", "unsupported")
    body = _ask(wiki, "Ktorí študenti Daniela Hládka majú tag sentiment?")
    assert body["status"] == "no_answer" and body["claims"] == [], body


def test_what_a_topic_is_is_no_list_of_its_students(wiki: Any) -> None:
    # "Čo je téma X?" asks what X is: the graph's students of topic X answer something else
    assert _graph(wiki, "Ktorí študenti majú tému Analýza sentimentu?")["status"] == "ok"
    body = _ask(wiki, "Čo je téma Analýza sentimentu?")
    assert body["engine"] == "text" and "Patrik Hric" not in (body["answer"] or ""), body
    # a graph answer to another question of that shape stays the graph's
    body = _ask(wiki, "Čo je vedúci práce Patrika Hrica?")
    assert body["engine"] == "graph" and "Kolárová" in body["answer"], body


def test_works_a_supervisor_defended_are_not_her_students(wiki: Any) -> None:
    # "Koľko prác obhájila X?" asks for X's own works: the number of students she supervised answers nothing
    graph = _graph(wiki, "Koľko prác obhájila Eva Kolárová?")
    assert graph["intent"] != "supervised_by", graph
    assert _graph(wiki, "Koľko študentov Evy Kolárovej začalo v roku 2022?")["intent"] == "supervised_by"


@pytest.mark.parametrize("question", ["Kto bol konzultantom diplomovej práce Patrika Hrica?",
                                      "Kdo byl konzultantem práce Patrika Hrice?"])
def test_a_consultant_is_not_the_supervisor(wiki: Any, question: str) -> None:
    # a consultant (konzultant) is another role than the supervisor (vedúci práce), and the pages name none:
    # the supervisor is never given as the consultant
    graph = _graph(wiki, question)
    assert graph["intent"] != "supervisor_of_work" and graph["status"] != "ok", graph
    body = _ask(wiki, question)
    assert body["status"] == "no_answer" and "Kolárová" not in (body["answer"] or ""), body
    supervisor = _graph(wiki, "Kto bol vedúcim práce Patrika Hrica?")
    assert (supervisor["status"], supervisor["intent"]) == ("ok", "supervisor_of_work"), supervisor
    assert "Kolárová" in repr(supervisor["answer"]), supervisor


def test_listed_on_the_page_in_english_reads_on_as_a_preposition(wiki: Any) -> None:
    # "on" in graphwords.yaml is quoted: a bare on is YAML's true, and "on the page X" was no direction
    graph = _graph(wiki, "Which students are listed on the topic page Analýza sentimentu?")
    assert (graph["status"], graph["intent"]) == ("ok", "links_from"), graph
    assert sorted(graph["answer"]["titles"]) == ["Nikola Čižmárová", "Patrik Hric"]


@pytest.mark.parametrize("question", [
    "Ktorí študenti majú tag sentiment a obhájili s vyznamenaním?",
    "Kto má kategóriu dr2018 a pochvalu dekana?",
    "Which students with the tag sentiment graduated with distinction?",
])
def test_structure_question_not_understood_is_refused(wiki: Any, question: str) -> None:
    graph = _graph(wiki, question)
    assert (graph["status"], graph["reason"]) == ("no_answer", "unsupported_question"), graph
    assert graph["entities"]["structure_question"] is True
    body = _ask(wiki, question)
    assert (body["status"], body["reason"], body["engine"]) == ("no_answer", "unsupported_question", "graph"), body
    assert body["claims"] == [] and body["answer"] in (None, "")


@pytest.mark.parametrize(("question", "expected"), [
    ("S akými nástrojmi študenti najčastejšie pracujú v téme Analýza sentimentu?", "spaCy"),
    ("What does the category code tp2020 mean on the student pages?", "tp2020"),
])
def test_content_questions_with_metadata_words_still_go_to_text(wiki: Any, question: str, expected: str) -> None:
    graph = _graph(wiki, question)
    assert graph["status"] == "no_answer" and graph["entities"]["structure_question"] is False, graph
    body = _ask(wiki, question)
    assert body["engine"] == "text", body
    if body["status"] == "ok":
        assert expected in body["answer"]


# -- blog ------------------------------------------------------------------------------------------

AUTHORS = "- id: tzna\n  name: Tomáš Znamenáček\n- id: lhrd\n  name: Lucie Hrdinová\n"


def _post(title: str, author: str, tags: list[str], day: int) -> str:
    tag_lines = "".join(f"  - {t}\n" for t in tags)
    return (f'---\ntitle: "{title}"\nauthor: {author}\ntags:\n{tag_lines}date: 2023-01-{day:02d}\n---\n\n'
            f"Text příspěvku {title.lower()}.\n")


@pytest.fixture(scope="module")
def blog(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> Any:
    root = tmp_path_factory.mktemp("graph-structure-blog")
    repo = RepoBuilder(root / "repo")
    repo.write("content/authors.yaml", AUTHORS)
    for day in range(1, 4):
        repo.write(f"content/posts/2023-01-{day:02d}-post.md",
                   _post(f"Zápisky z hackathonu {day}", "tzna", ["nedluzim-statu"] if day < 3 else ["akce"], day))
    for day in range(4, 6):
        repo.write(f"content/press/2023-01-{day:02d}-tz.md",
                   _post(f"Tisková zpráva o projektu {day}", "tzna", ["nedluzim-statu"], day))
    repo.write("content/press/2023-01-09-tz.md", _post("Tisková zpráva Lucie", "lhrd", ["akce"], 9))
    repo.write("content/posts/2022-05-01-starsi.md",
               _post("Starší zápisky", "tzna", ["nedluzim-statu"], 1).replace("date: 2023-01-01", "date: 2022-05-01"))
    bundle = _build_and_open(repo, root, "blog", hash_embedder)
    yield bundle
    bundle.close()


def test_posts_including_press_releases_of_an_author(blog: Any) -> None:
    body = _ask(blog, "Kolik příspěvků (včetně tiskových zpráv) napsal Tomáš Znamenáček?")
    assert (body["status"], body["engine"]) == ("ok", "graph"), body
    assert body["answer"].startswith("Počet: 6.")


def test_posts_that_carry_a_tag(blog: Any) -> None:
    body = _ask(blog, "How many posts carry the nedluzim-statu tag?")
    assert (body["status"], body["engine"]) == ("ok", "graph"), body
    assert body["answer"].startswith("Count: 5.")


def test_posts_of_an_author_with_a_tag(blog: Any) -> None:
    # the tag selects among the author's posts (main answered with the author's tags instead)
    body = _ask(blog, "Které články se štítkem nedluzim-statu napsal Tomáš Znamenáček?")
    assert (body["status"], body["engine"]) == ("ok", "graph"), body
    assert body["answer"].startswith("Počet: 5.")
    assert "Zápisky z hackathonu 3" not in body["answer"]  # his, tagged akce only
    assert "„Zápisky z hackathonu 1“: štítky nedluzim-statu." in body["answer"]
    graph = _graph(blog, "Kolik článků se štítkem akce napsala Lucie Hrdinová?")
    assert graph["aggregation"]["count"] == 1 and graph["answer"]["tags"] == ["akce"]


@pytest.mark.parametrize(("question", "count"), [
    ("Kolik článků napsal Tomáš Znamenáček v roce 2022?", 1),
    ("Které články napsal Tomáš Znamenáček v roce 2023?", 3 + 2),
    ("Kolik článků se štítkem nedluzim-statu vyšlo v roce 2023?", 4),
    ("How many posts tagged nedluzim-statu are from 2022?", 1),
])
def test_documents_restricted_to_the_year_of_their_date(blog: Any, question: str, count: int) -> None:
    graph = _graph(blog, question)
    assert graph["status"] == "ok" and graph["aggregation"]["count"] == count, graph
    body = _ask(blog, question)
    assert (body["status"], body["engine"]) == ("ok", "graph"), body
    if count == 1:  # the date is stated for each document
        assert "„Starší zápisky“: datum 2022-05-01." in body["answer"] or \
            "“Starší zápisky”: date 2022-05-01." in body["answer"], body["answer"]


def test_blog_structure_question_not_understood_is_refused(blog: Any) -> None:
    body = _ask(blog, "Kolik článků se štítkem akce vyšlo v úterý?")
    assert (body["status"], body["reason"], body["engine"]) == ("no_answer", "unsupported_question", "graph"), body


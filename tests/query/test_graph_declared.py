"""Graph intents declared as data: a handbook's mapping file maps front matter fields (``owner:``,
``team:``) to relations and declares the intents that ask about them; no code knows them.  Real Git,
real ladybug, hash embedder."""

from __future__ import annotations

from typing import Any

import pytest

from artifacts.graphmap import GraphMappingError, parse_mapping
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.graph.dispatch import answer_graph
from tests.conftest import RepoBuilder

HANDBOOK = """\
name: handbook
version: 1
authors: person
relations:
  owner: {fields: [owner, owners]}
  team: {}
questions:
  concepts:
    own: {en: [own, owner, owners], de: [gehören, zuständig]}
    team: {en: [team], de: [team]}
intents:
  owner_of_page:
    words: [own]
    slots: {page: page}
    cypher: >-
      MATCH (d:Document {path: $page})-[:HAS_FIELD]->(v:FieldValue {relation: 'owner'})
      RETURN d.path, d.path, v.name ORDER BY v.name
    predicate: owner
    phrasing: {en: "{subject} is owned by {object}.", de: "{subject} gehört {object}."}
  pages_of_team:
    words: [own, team]
    slots: {team: "value:team"}
    cypher: >-
      MATCH (d:Document)-[:HAS_FIELD]->(v:FieldValue {relation: 'team', name: $team})
      WHERE d.published OR NOT $published_only
      RETURN d.path, v.name, d.path ORDER BY d.path
    predicate: owns
    phrasing: {en: "Team {subject} owns {object}."}
"""

MAINTAINER = """\
  maintainer: {}
"""
MAINTAINER_WORDS = """\
    maintain: {en: [maintain, maintainer]}
"""
MAINTAINER_INTENT = """\
  maintainer_of_page:
    words: [maintain]
    slots: {page: page}
    cypher: >-
      MATCH (d:Document {path: $page})-[:HAS_FIELD]->(v:FieldValue {relation: 'maintainer'})
      RETURN d.path, d.path, v.name ORDER BY v.name
    predicate: maintainer
    phrasing: {en: "{subject} is maintained by {object}."}
"""


def page(title: str, body: str, **front: Any) -> str:
    lines = [f"title: {title}"] + [f"{k}: {v}" for k, v in front.items()]
    return "---\n" + "\n".join(lines) + f"\n---\n\n# {title}\n\n{body}\n"


def write_handbook(repo: RepoBuilder, mapping: str | None) -> None:
    if mapping is not None:
        repo.write("graph-schema.yaml", mapping)
    repo.write("ops/deploy.md", page("Deploy Guide", "How we ship a release.", owner="[Alice Novak, Bob Stone]",
                                     team="Platform", maintainer="Carol Reed"))
    repo.write("ops/oncall.md", page("On-call Rota", "Who answers the pager.", owner="Bob Stone", team="Platform"))
    repo.write("people/hiring.md", page("Hiring Process", "How we hire.", owner="Dana White", team="People"))
    repo.write("people/leave.md", page("Leave Policy", "Owner of this page: Frank Moss. Ask HR for leave."))
    repo.write("ops/secret.md", page("Incident Drafts", "Not yet.", owner="Eve Black", team="Platform",
                                     published="false"))


def _with_maintainer(mapping: str) -> str:
    """The handbook mapping with one more relation, its question words and its intent: text only."""
    mapping = mapping.replace("  team: {}\n", "  team: {}\n" + MAINTAINER, 1)
    mapping = mapping.replace("    team: {en: [team], de: [team]}\n",
                              "    team: {en: [team], de: [team]}\n" + MAINTAINER_WORDS, 1)
    return mapping + MAINTAINER_INTENT


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> dict[str, Any]:
    """Two commits: the handbook with the owner and team intents, then the mapping file alone changed
    to add a maintainer intent."""
    tmp = tmp_path_factory.mktemp("handbook")
    repo = RepoBuilder(tmp / "repo")
    write_handbook(repo, HANDBOOK)
    first = build_bundle(repo.path, tmp / "store", repo.commit("handbook"), embedder=hash_embedder)
    repo.write("graph-schema.yaml", _with_maintainer(HANDBOOK))
    second = build_bundle(repo.path, tmp / "store", repo.commit("maintainer intent"), embedder=hash_embedder)
    bundles = {name: open_bundle(r.bundle_path, verify=False, embedder=hash_embedder)
               for name, r in (("first", first), ("second", second))}
    yield bundles
    for bundle in bundles.values():
        bundle.close()


def test_who_owns_a_page(handbook: dict[str, Any]) -> None:
    body = answer_graph(handbook["first"], {"query": "Who owns the Deploy Guide?"})
    assert (body["status"], body["intent"]) == ("ok", "owner_of_page")
    assert body["answer"]["values"] == ["Alice Novak", "Bob Stone"]
    assert body["aggregation"] == {"count": 2, "complete": True} and body["complete"] is True
    assert body["answer"]["lines"] == ["Deploy Guide is owned by Alice Novak, Bob Stone."]
    assert {(f["subject"], f["predicate"], f["object"], f["document_path"]) for f in body["facts"]} == {
        ("ops/deploy.md", "owner", "Alice Novak", "ops/deploy.md"),
        ("ops/deploy.md", "owner", "Bob Stone", "ops/deploy.md")}
    assert [s["document_path"] for s in body["sources"]] == ["ops/deploy.md"]


def test_what_does_a_team_own(handbook: dict[str, Any]) -> None:
    body = answer_graph(handbook["first"], {"query": "What does team Platform own?"})
    assert (body["status"], body["intent"]) == ("ok", "pages_of_team")
    assert body["answer"]["documents"] == ["ops/deploy.md", "ops/oncall.md"]  # the unpublished page is left out
    assert body["aggregation"]["count"] == 2
    assert body["entities"]["field_values"] == {"team": ["Platform"]}
    hidden = answer_graph(handbook["first"], {"query": "What does team Platform own?", "published_only": False})
    assert hidden["answer"]["documents"] == ["ops/deploy.md", "ops/oncall.md", "ops/secret.md"]
    cut = answer_graph(handbook["first"], {"query": "What does team Platform own?", "limit": 1})
    assert (cut["answer"]["documents"], cut["aggregation"]["count"]) == (["ops/deploy.md"], 2)
    assert (cut["truncated"], cut["truncation_reasons"], cut["complete"]) == (True, ["result_limit"], False)


def test_a_question_the_declared_intents_do_not_cover_is_not_answered(handbook: dict[str, Any]) -> None:
    for question in ("Who owns the Cooking Guide?", "What does team Sales own?", "Who owns the Deploy Guide in 2020?"):
        body = answer_graph(handbook["first"], {"query": question})
        assert body["intent"] not in ("owner_of_page", "pages_of_team"), question
        assert body["status"] != "ok", question


def test_a_page_without_the_field_goes_to_the_text(handbook: dict[str, Any]) -> None:
    from tests.query.answer_fixtures import ask_extractive

    body = answer_graph(handbook["first"], {"query": "Who owns the Leave Policy?"})
    assert (body["status"], body["reason"], body["intent"]) == ("no_answer", "unsupported_question", "owner_of_page")
    # the page the question names is where the text is searched (issue 22 item 6)
    assert ask_extractive(handbook["first"], "Who owns the Leave Policy?")["engine"] == "graph+text"


def test_a_new_intent_is_a_mapping_file_change_only(handbook: dict[str, Any]) -> None:
    question = {"query": "Who is the maintainer of the Deploy Guide?"}
    before = answer_graph(handbook["first"], question)
    assert before["status"] != "ok"
    after = answer_graph(handbook["second"], question)
    assert (after["status"], after["intent"], after["answer"]["values"]) == ("ok", "maintainer_of_page", ["Carol Reed"])
    assert after["answer"]["lines"] == ["Deploy Guide is maintained by Carol Reed."]
    # the intents of the first file still answer
    assert answer_graph(handbook["second"], {"query": "Who owns the Deploy Guide?"})["answer"]["values"] == [
        "Alice Novak", "Bob Stone"]


def test_answer_delivers_a_declared_intent_from_the_graph(handbook: dict[str, Any]) -> None:
    from tests.query.answer_fixtures import ask_extractive

    owners = ask_extractive(handbook["first"], "Who owns the Deploy Guide?")
    assert (owners["status"], owners["engine"]) == ("ok", "graph")
    assert "Alice Novak, Bob Stone" in owners["answer"]
    assert [s["document_path"] for s in owners["sources"]] == ["ops/deploy.md"]
    team = ask_extractive(handbook["first"], "What does team Platform own?")
    assert (team["status"], team["engine"]) == ("ok", "graph")
    assert "Deploy Guide" in team["answer"] and "On-call Rota" in team["answer"]
    assert "Incident Drafts" not in team["answer"]
    # a question no declared intent covers goes to the text
    assert ask_extractive(handbook["first"], "How do we hire?")["engine"] == "text"


def test_mapping_rejects_intents_it_cannot_run() -> None:
    with pytest.raises(GraphMappingError, match="slot"):
        parse_mapping(HANDBOOK.replace("slots: {page: page}", "slots: {page: person}", 1))
    with pytest.raises(GraphMappingError, match="does not declare"):
        parse_mapping(HANDBOOK.replace("  team: {}\n", "", 1))
    with pytest.raises(GraphMappingError, match=r"\$page"):
        parse_mapping(HANDBOOK.replace("{path: $page}", "{path: 'x'}", 1))


@pytest.fixture(scope="module")
def generic(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> Any:
    """The same handbook without a mapping file: the build detects the generic preset."""
    tmp = tmp_path_factory.mktemp("generic")
    repo = RepoBuilder(tmp / "repo")
    write_handbook(repo, None)
    result = build_bundle(repo.path, tmp / "store", repo.commit("handbook"), embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, load_model=False)
    yield bundle
    bundle.close()


@pytest.mark.parametrize(("question", "intent", "values"), [
    ("Who owns the Deploy Guide?", "owner_of_page", ["Alice Novak", "Bob Stone"]),
    ("Wer ist für den Deploy Guide zuständig?", "owner_of_page", ["Alice Novak", "Bob Stone"]),
    ("Kto je vlastníkom stránky Deploy Guide?", "owner_of_page", ["Alice Novak", "Bob Stone"]),
    ("Which team owns the On-call Rota?", "team_of_page", ["Platform"]),
    ("What does team People own?", "pages_of_team", ["people/hiring.md"]),
    ("What does Bob Stone own?", "pages_of_owner", ["ops/deploy.md", "ops/oncall.md"]),
    ("Who maintains the Deploy Guide?", "maintainer_of_page", ["Carol Reed"]),
    ("What does Carol Reed maintain?", "pages_of_maintainer", ["ops/deploy.md"]),
])
def test_generic_preset_maps_owner_team_and_maintainer(generic: Any, question: str, intent: str,
                                                       values: list[str]) -> None:
    assert generic.manifest.model_extra["graph_mapping_choice"]["name"] == "generic"
    body = answer_graph(generic, {"query": question})
    assert (body["status"], body["intent"], body["answer"]["values"]) == ("ok", intent, values)

"""Property: no graph list answer says ``complete: true`` while its list is shorter than the count it states.

A thesis wiki of 40 students (tags, works, start years and supervisors drawn from a seeded random
generator) is written as a real Git repository and built once; hypothesis then draws list questions
(persons with a tag, with two tags and an operator, with a work in a year, started in a year, of a
supervisor), a ``/graph`` ``limit`` and an ``/answer`` ``max_context_tokens``.  For every response:

* ``/graph``: ``complete: true`` means the answer lists ``aggregation.count`` entries; a cut list is
  ``complete: false`` with a ``truncation_reasons`` entry;
* ``/answer``: ``complete: true`` means every person of the whole list (from the files written here)
  is named in the answer text; otherwise the text ends with "and N more" for exactly the persons it
  does not name, and ``truncation_reasons`` says why.
"""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from artifacts.graphmap import PRESETS
from tests.conftest import RepoBuilder

FIRST = ["Adam", "Boris", "Cyril", "Dušan", "Emil", "Filip", "Gabriel", "Henrich", "Igor", "Jozef"]
LAST = ["Ambróz", "Bielik", "Cibula", "Dobrotka", "Elekta", "Fiala", "Gombík", "Hronec"]
TAGS = ["nlp", "asr", "rag", "llm", "ocr"]
SUPERVISORS = ["Eva Kolárová", "Daniel Hládek"]


def _students() -> list[dict[str, Any]]:
    rng = random.Random(24)
    names = [f"{f} {last}" for f in FIRST for last in LAST]
    rng.shuffle(names)
    out = []
    for i, name in enumerate(names[:40]):
        start = rng.choice([2016, 2017, 2018])
        works = [("bp", start + 3)] + ([("dp", start + 5)] if rng.random() < 0.6 else [])
        out.append({"name": name, "folder": f"{start}/s{i:02d}", "start": start, "works": works,
                    "tags": sorted(rng.sample(TAGS, rng.randint(1, 3))), "supervisor": rng.choice(SUPERVISORS)})
    return out


STUDENTS = _students()


def _page(s: dict[str, Any]) -> str:
    categories = ", ".join([f"{t}{y}" for t, y in s["works"]] + [f"st{s['start']}"])
    sections = "".join(f"\n## {'Bakalárska' if t == 'bp' else 'Diplomová'} práca {y}\n\n*Názov*: Práca {s['name']} "
                       f"{t} {y}\n" for t, y in s["works"])
    return (f"---\ntitle: {s['name']}\npublished: true\ntaxonomy:\n    category: [{categories}]\n"
            f"    tag: [{', '.join(s['tags'])}]\n    author: {s['supervisor']}\n---\n\n# {s['name']}\n\n"
            f"Vedúci práce: {s['supervisor']}\n{sections}")


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> Any:
    from indexer.build import build_bundle
    from query.bundle import open_bundle

    root = tmp_path_factory.mktemp("graph-lists")
    repo = RepoBuilder(root / "repo")
    repo.write("graph-schema.yaml", PRESETS["thesis-wiki"])
    for s in STUDENTS:
        repo.write(f"pages/students/{s['folder']}/README.md", _page(s))
    result = build_bundle(repo.path, root / "store", repo.commit("wiki"), embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    yield bundle
    bundle.close()


def _question(kind: str, a: Any, b: Any, op: str) -> tuple[str, set[str]]:
    """A list question and the names of the persons it asks for, from :data:`STUDENTS`."""
    if kind == "tag":
        return f"Ktorí študenti majú tag {a}?", {s["name"] for s in STUDENTS if a in s["tags"]}
    if kind == "two_tags":
        words = {"and": "aj", "or": "alebo", "but_not": "ale nie"}[op]
        x = {s["name"] for s in STUDENTS if a in s["tags"]}
        y = {s["name"] for s in STUDENTS if b in s["tags"]}
        return f"Kto má štítky {a} {words} {b}?", x & y if op == "and" else x | y if op == "or" else x - y
    if kind == "started":
        return f"Ktorí študenti začali študovať v roku {a}?", {s["name"] for s in STUDENTS if s["start"] == a}
    if kind == "work":
        return (f"Ktorí študenti robili bakalársku prácu v roku {a}?",
                {s["name"] for s in STUDENTS if ("bp", a) in s["works"]})
    return f"Vypíš všetkých študentov, ktorých viedol {a}.", {s["name"] for s in STUDENTS if s["supervisor"] == a}


QUESTIONS = st.one_of(
    st.tuples(st.just("tag"), st.sampled_from(TAGS), st.none(), st.just("and")),
    st.tuples(st.just("two_tags"), st.sampled_from(TAGS), st.sampled_from(TAGS),
              st.sampled_from(["and", "or", "but_not"])).filter(lambda q: q[1] != q[2]),
    st.tuples(st.just("started"), st.sampled_from([2016, 2017, 2018]), st.none(), st.just("and")),
    st.tuples(st.just("work"), st.sampled_from([2019, 2020, 2021]), st.none(), st.just("and")),
    st.tuples(st.just("supervised"), st.sampled_from(SUPERVISORS), st.none(), st.just("and")),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=QUESTIONS, limit=st.integers(1, 50), budget=st.integers(500, 4000))
def test_complete_lists_are_whole(wiki: Any, question: tuple[str, Any, Any, str], limit: int, budget: int) -> None:
    from query.answer.generators import make_generator
    from query.answer.pipeline import answer, parse_answer_request
    from query.graph.dispatch import answer_graph
    from query.search.request import SearchOptions

    text, names = _question(*question)
    body = answer_graph(wiki, {"query": text, "limit": limit})
    if body["status"] == "ok":
        count = body["aggregation"]["count"]
        assert count == len(names), text
        listed = body["answer"]["persons"]
        assert body["complete"] == (len(listed) == count), (text, limit, len(listed), count)
        assert body["complete"] or body["truncation_reasons"]
    else:
        assert not names, (text, body["status"], body["reason"])  # only an empty set is no answer

    reply = asyncio.run(answer(wiki, parse_answer_request({"query": text, "max_context_tokens": budget}),
                               SearchOptions(), make_generator("extractive", {})))
    if reply["status"] != "ok":
        assert not names, (text, reply["status"], reply["reason"])
        return
    shown = {n for n in names if n in reply["answer"]}
    more = [int(n) for n in re.findall(r"A ďalšie (\d+)\.", reply["answer"])]
    if reply["complete"]:
        assert shown == names and not more, (text, budget, len(shown), len(names))
    else:
        assert reply["truncation_reasons"], text
        assert more == [len(names) - len(shown)], (text, budget, more, len(names), len(shown))


def test_a_larger_budget_gets_the_whole_list(wiki: Any) -> None:
    from query.answer.generators import make_generator
    from query.answer.pipeline import answer, parse_answer_request
    from query.search.request import SearchOptions

    text, names = _question("supervised", SUPERVISORS[0], None, "and")
    small, large = (asyncio.run(answer(wiki, parse_answer_request({"query": text, "max_context_tokens": n}),
                                       SearchOptions(), make_generator("extractive", {}))) for n in (500, 12000))
    assert small["complete"] is False and "llm_context_budget" in small["truncation_reasons"]
    assert re.search(r"A ďalšie \d+\.", small["answer"])
    assert large["complete"] is True and all(n in large["answer"] for n in names)

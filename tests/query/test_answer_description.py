"""A front-matter description is evidence an answer can quote, with its provenance (issue 13).

The indexer keeps ``description: …`` as a chunk of its own whose ``heading_path`` is ``["description"]``
(:data:`query.answer.evidence.FRONT_MATTER_SECTIONS`).  The answer path quotes it verbatim and says where the
quote stands: the document, section ``description`` (claims' ``evidence[].heading_path``, ``gitrag ask``
prints ``[S1] path (description)``).  Evidence-level tests run on any indexer; the end-to-end test over a
real Git repo and hash-64 bundle needs an indexer that keeps descriptions (it skips, saying so, without).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from query.answer.attribution import check_reply
from query.answer.delivery import _deliver
from query.answer.evidence import EvidenceItem
from query.answer.generators import ExtractiveGenerator
from query.answer.pipeline import answer, parse_answer_request
from query.answer.rag import Context
from query.answer.relevance import claim_relevance, quote_section, relevance_gate
from query.cli.ask import _front_matter_quotes
from query.search.request import SearchOptions
from tests.conftest import RepoBuilder
from tests.query.answer_fixtures import built_blog

DESCRIPTION = ("Jakub Novák vybudoval a v roce 2017 prodal úspěšnou technologickou firmu Zlatokop. "
               "Teď pomáhá neziskovkám.")
BODY = "## Začátky\n\nRozhovor vznikl na podzim. Mluvili jsme o komunitě a o tom, co ji drží pohromadě.\n"


def _description_item() -> EvidenceItem:
    return EvidenceItem(evidence_id="E1", kind="chunk", text=DESCRIPTION, document_path="posts/rozhovor.md",
                        source_id="S1", commit="0" * 40, chunk_id="posts/rozhovor.md#0",
                        title="Rozhovor s Jakubem", heading_path=("description",), tokens=30)


def test_a_description_chunk_is_quoted_with_its_section() -> None:
    question = "Kdy byla prodána firma Zlatokop?"
    item = _description_item()
    reply = ExtractiveGenerator().select(question, [item])
    assert [c.quote for c in reply.claims] == [DESCRIPTION.split(" Teď")[0]]
    verdicts = check_reply(question, reply, [item])
    assert all(v.ok for v in verdicts)
    gate = relevance_gate(question, [item])
    assert claim_relevance(gate, reply.claims[0], [item]) == []
    assert quote_section(reply.claims[0].quote, item) == ("description",)
    context = Context(items=[item])
    _, claims, _ = _deliver(list(reply.claims), context, display=True)
    assert claims[0]["evidence"][0]["heading_path"] == ["description"]
    assert claims[0]["evidence"][0]["document_path"] == "posts/rozhovor.md"
    assert _front_matter_quotes({"claims": claims}) == {"S1": ["description"]}


def test_a_body_quote_names_the_headings_it_sits_under() -> None:
    item = EvidenceItem(evidence_id="E1", kind="chunk", text=BODY, document_path="posts/rozhovor.md",
                        source_id="S1", commit="0" * 40, chunk_id="posts/rozhovor.md#1", title="Rozhovor",
                        heading_path=("Rozhovor",), tokens=30)
    assert quote_section("Rozhovor vznikl na podzim.", item) == ("Rozhovor", "Začátky")
    assert _front_matter_quotes({"claims": [{"evidence": [{"source_id": "S1", "heading_path": ["Začátky"]}]}]}) == {}


def _repo(root: Path) -> RepoBuilder:
    repo = RepoBuilder(root / "blog")
    repo.write("posts/rozhovor.md", "---\ntitle: Rozhovor s Jakubem\ndescription: '" + DESCRIPTION + "'\n---\n" + BODY)
    repo.write("posts/jine.md", "---\ntitle: Jiný příspěvek\n---\nKomunita se schází každý měsíc v Praze.\n")
    repo.commit("posts")
    return repo


@pytest.fixture(scope="module")
def blog(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("description")
    yield from built_blog(_repo(root).path, root / "store", hash_embedder)


def test_an_answer_quotes_the_description_of_a_real_bundle(blog: dict[str, Any]) -> None:
    bundle = blog["bundle"]
    if not any(list(c.heading_path) == ["description"] for c in bundle.chunks):
        pytest.skip("this indexer does not keep front-matter descriptions as chunks (helper fmsnip's change)")
    request = parse_answer_request({"query": "Kdy byla prodána firma Zlatokop?"})
    body = asyncio.run(answer(bundle, request, SearchOptions(), ExtractiveGenerator()))
    assert body["status"] == "ok", body
    assert body["answer"].startswith("Jakub Novák vybudoval a v roce 2017 prodal úspěšnou technologickou firmu")
    evidence = body["claims"][0]["evidence"][0]
    assert evidence["document_path"] == "posts/rozhovor.md" and evidence["heading_path"] == ["description"]
    assert evidence["quote"] in DESCRIPTION

    from query.cli.ask import ask_command

    result = CliRunner().invoke(ask_command, ["Kdy byla prodána firma Zlatokop?", "--store",
                                              str(blog["store"])])
    assert result.exit_code == 0, result.output
    assert "[S1] posts/rozhovor.md (description)" in result.output
    result = CliRunner().invoke(ask_command, ["Kdy byla prodána firma Zlatokop?", "--store",
                                              str(blog["store"]), "--json"])
    assert json.loads(result.output)["claims"][0]["evidence"][0]["heading_path"] == ["description"]


def test_the_title_is_the_section_of_a_description_quote() -> None:
    """A description summarises its page: the page title names what it is about, as for a quote under no
    heading; under a real heading the title does not count (a newsletter's title names all its topics)."""
    from query.answer.evidence import Claim
    from query.answer.relevance import RelevanceGate
    from query.question import question_focus

    question = "Kolik lidí se sešlo na prvním hackdayi?"
    gate = RelevanceGate(question_focus(question), ("lidi", "seslo", "prvnim", "hackday"),
                         weights=(1.835, 6.239, 4.209, 3.96), verbs=frozenset({"seslo"}))
    text = "Sešlo se nás přes 40 lidí a byla to jízda."
    claim = Claim(text=text, evidence=("E1",), quote=text)

    def item(heading_path: tuple[str, ...]) -> EvidenceItem:
        return EvidenceItem(evidence_id="E1", kind="chunk", text=text, document_path="posts/hackday.md",
                            source_id="S1", commit="0" * 40, chunk_id="posts/hackday.md#0",
                            title="První hackday", heading_path=heading_path, tokens=12)

    key = "the quote does not address the question's most specific word"
    assert key not in claim_relevance(gate, claim, [item(("description",))])
    assert key in claim_relevance(gate, claim, [item(("Meetup v STRV",))])

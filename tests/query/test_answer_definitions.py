"""Definition questions ("Co je X?", "What is X?", "Kdo je X?") and the display form of answers, on a
real tiny blog (Git repo in tmp_path, real Whoosh/hnswlib/graph bundle), over real HTTP, and on the
real Czech blog (shared corpus, slow)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from query.answer.evidence import Claim, EvidenceItem
from query.answer.relevance import claim_relevance, relevance_gate
from query.answer.sentences import defines, text_units
from query.question import definition_question, question_focus
from query.server.app import create_app
from tests.conftest import RepoBuilder
from tests.query.answer_fixtures import ask_extractive, built_blog, real_blog

JEHLOMAT = ("Expertním dobrovolníkům se během práce na projektu **Jehlomat** podařilo navrhnout nové řešení. "
            "Práce na Jehlomatu rozhodně nekončí. "
            "A tak v roce 2014 vznikl **Jehlomat** – aplikace, která má zajišťovat rychlou evidenci a bezpečnou "
            "likvidaci injekčního odpadu.")
DEFINING = ("A tak v roce 2014 vznikl **Jehlomat** – aplikace, která má zajišťovat rychlou evidenci a bezpečnou "
            "likvidaci injekčního odpadu.")


def _blog(root: Path) -> RepoBuilder:
    repo = RepoBuilder(root / "blog")
    repo.write("posts/jehlomat.md", "---\ntitle: Předání projektu\nauthor: Petra Malá\n---\n" + JEHLOMAT + "\n")
    repo.write("posts/unipa.md", "---\ntitle: Případovka\n---\n## Medailonek organizace\n\n"
                                 "Jsme Unie porodních asistentek, z. s. (UNIPA), nezisková profesní organizace "
                                 "porodních asistentek. Od roku 2005 se podílíme na rozvoji oboru.\n\n"
                                 "Příběh UNIPA ukazuje, že změna nemusí začínat velkou transformací.\n")
    repo.write("posts/mentomat.md", "---\ntitle: Hackathon v Brně\n---\nNa hackathonu jsme pracovali na projektu "
                                    "Mentomat. Mentomat jsme pak představili v Brně.\n")
    repo.write("posts/kreslomat.md", "---\ntitle: Novinky\n---\nPředstavili jsme mobilní aplikaci Kreslomat "
                                     "pro děti. Kreslomat jsme ukázali v Praze.\n")
    repo.write("posts/zlatokop.md", "---\ntitle: Řeka\n---\nProjekt **Zlatokop** měří průtok řeky "
                                    "[každou hodinu](https://example.org/hodiny).\n")
    repo.commit("posts")
    return repo


@pytest.fixture(scope="module")
def blog(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("definitions")
    yield from built_blog(_blog(root).path, root / "store", hash_embedder)


def ask(bundle: Any, question: str) -> dict[str, Any]:
    return ask_extractive(bundle, question, False)


@pytest.mark.parametrize(("question", "kind", "words"), [
    ("Co je Jehlomat?", "thing", ("jehlomat",)),
    ("Čo je to Jehlomat?", "thing", ("jehlomat",)),
    ("What is the Jehlomat app?", "thing", ("jehlomat", "app")),
    ("What's UNIPA", "thing", ("unipa",)),
    ("Was ist Česko.Digital?", "thing", ("cesko.digital",)),
    ("Co znamená zkratka UNIPA?", "thing", ("unipa",)),
    ("Co je Nový Zlatomat?", "thing", ("novy", "zlatomat")),
    ("Kdo je Petra Malá?", "person", ("petra", "mala")),
    ("Who was Ada Lovelace?", "person", ("ada", "lovelace")),
])
def test_definition_questions_are_recognised(question: str, kind: str, words: tuple[str, ...]) -> None:
    found = definition_question(question)
    assert found is not None and (found.kind, found.words) == (kind, words)


@pytest.mark.parametrize("question", [
    "What is the title of Peter Toth's diploma thesis?", "What is Radovan Šimek's e-mail address?",
    "Čo je v zadaní diplomovej práce Márie Vargovej?", "Co je UNIPA a čím se zabývá?",
    "Co měří projekt Zlatokop?", "Kolik stojí Jehlomat?",
])
def test_other_questions_are_no_definition_questions(question: str) -> None:
    assert definition_question(question) is None


@pytest.mark.parametrize(("sentence", "strength"), [
    ("Jsme Unie porodních asistentek, z. s. (UNIPA), nezisková profesní organizace.", 4),
    ("UNIPA je nezisková profesní organizace porodních asistentek.", 4),
    ("UNIPA, spolek porodních asistentek, je nezisková organizace.", 4),
    ("Vznikla **UNIPA** – organizace porodních asistentek.", 3),
    ("Spolupracujeme s UNIPA, která sdružuje porodní asistentky.", 2),
    ("Příběh UNIPA ukazuje, že změna nemusí začínat velkou transformací.", 0),
    ("Vedení UNIPA je otevřené novým nástrojům.", 0),          # UNIPA is no subject here
    ("Autorka: Veronika Quek (UNIPA).", 0),                    # no abbreviated words before it
    ("Práce na UNIPĚ – pokračuje dál.", 0),                    # inflected: no apposition of the subject
    ("Organizace UNIPA byla založena v roce 2005.", 4),        # a noun of its kind before the subject
    ("UNIPA (unie porodních asistentek) pomáhá.", 3),
    ("Product Owner aplikace UNIPA (Loono), povídají.", 1),    # a bare name in brackets adds nothing: kind only
    ("Na projektu UNIPA jsme pracovali rok.", 0),              # a bare noun of its kind after a preposition
    ("Akcelerace organizace UNIPA je u konce.", 1),             # no opening: UNIPA is no subject; kind only
    ("Kurzy vládní iniciativy UNIPA jsou dostupné.", 1),
    ("Marketingová koordinátorka UNIPA Eva Malá napsala článek.", 0),  # a role noun governs a thing: no kind
])
def test_defining_sentences(sentence: str, strength: int) -> None:
    definition = definition_question("Co je UNIPA?")
    assert definition is not None and defines(definition, sentence) == strength


@pytest.mark.parametrize(("unit", "shown"), [
    ("**Sbírka počítačů, která vznikla, přešla.", "Sbírka počítačů, která vznikla, přešla."),
    ("_V druhej rovine má Jehlomat za cieľ.", "V druhej rovine má Jehlomat za cieľ."),
    ("Konec **věty.**", "Konec věty."),
    ("Projekt **Zlatokop** měří [průtok](https://x.org).", "Projekt Zlatokop měří průtok."),
    ("Soubor x_y_z se načte.", "Soubor x_y_z se načte."),
    ("**\\\nJan Kotara** (COO, Česko.Digital)", "Jan Kotara (COO, Česko.Digital)"),
])
def test_claim_text_is_the_display_form_of_its_unit(unit: str, shown: str) -> None:
    from query.answer.generators import shown_text

    assert shown_text(unit) == shown


def test_a_role_noun_before_a_person_says_who_they_are() -> None:
    definition = definition_question("Kdo je Vojta Petrus?")
    assert definition is not None
    assert defines(definition, "Koordinátor projektu Vojta Petrus připravuje uživatelský výzkum.") == 1
    assert defines(definition, "Na výzkumu pracuje Vojta Petrus od jara.") == 0


def test_one_letter_abbreviations_do_not_end_a_sentence() -> None:
    text = ("Jsme Unie porodních asistentek, z. s. (UNIPA), nezisková organizace. Od roku 2005 pomáháme.\\\n"
            "Petra Malá (předsedkyně)")
    assert [u.text for u in text_units(text)] == [
        "Jsme Unie porodních asistentek, z. s. (UNIPA), nezisková organizace.", "Od roku 2005 pomáháme.",
        "Petra Malá (předsedkyně)"]


def test_a_definition_question_gets_the_defining_sentence(blog: dict[str, Any]) -> None:
    for question in ("Co je Jehlomat?", "Čo je Jehlomat?", "What is Jehlomat?"):
        body = ask(blog["bundle"], question)
        assert (body["status"], body["engine"]) == ("ok", "text"), question
        assert [c["evidence"][0]["quote"] for c in body["claims"]] == [DEFINING], question
        assert body["answer"].startswith("A tak v roce 2014 vznikl Jehlomat – aplikace")
        assert body["sources"][0]["document_path"] == "posts/jehlomat.md"
    unipa = ask(blog["bundle"], "Co je UNIPA?")
    assert unipa["status"] == "ok"
    assert unipa["answer"].startswith("Jsme Unie porodních asistentek, z. s. (UNIPA), nezisková profesní organizace")


def test_a_definition_by_kind_only_is_partial(blog: dict[str, Any]) -> None:
    body = ask(blog["bundle"], "Co je Kreslomat?")
    assert body["status"] == "ok"
    assert body["answer"] == "Představili jsme mobilní aplikaci Kreslomat pro děti. [S1]"
    coverage = body["answer_coverage"]
    assert coverage["status"] == "partial"
    assert any("No sentence of the pages defines Kreslomat" in w for w in coverage["warnings"])
    plain = ask(blog["bundle"], "Co je Jehlomat?")["answer_coverage"]
    assert plain["status"] == "supported" and plain["warnings"] == []


def test_a_thing_the_pages_only_mention_is_refused(blog: dict[str, Any]) -> None:
    body = ask(blog["bundle"], "Co je Mentomat?")
    assert (body["status"], body["reason"], body["engine"]) == ("no_answer", "insufficient_evidence", "text")
    assert body["claims"] == [] and body["answer"] is None


def test_an_absent_thing_is_no_unknown_person(blog: dict[str, Any]) -> None:
    for question in ("Co je Zlatomat?", "What is Zlatomat?", "Čo je Zlatomat?"):
        body = ask(blog["bundle"], question)
        assert (body["status"], body["reason"], body["engine"]) == ("no_answer", "insufficient_evidence", "text")
    person = ask(blog["bundle"], "Kdo je Karel Novák?")  # a person question about nobody the pages know
    assert (person["status"], person["reason"], person["engine"]) == ("no_answer", "unknown_person", "graph")


def test_the_answer_text_is_what_a_reader_sees_and_the_quote_stays_verbatim(blog: dict[str, Any]) -> None:
    body = ask(blog["bundle"], "Co měří projekt Zlatokop?")
    assert body["status"] == "ok"
    assert body["answer"] == "Projekt Zlatokop měří průtok řeky každou hodinu. [S1]"
    claim = body["claims"][0]
    assert claim["text"] == "Projekt Zlatokop měří průtok řeky každou hodinu."
    assert claim["evidence"][0]["quote"] == ("Projekt **Zlatokop** měří průtok řeky "
                                             "[každou hodinu](https://example.org/hodiny).")


def test_the_checker_rejects_a_mention_for_a_definition_question() -> None:
    """Every generator's claims pass through claim_relevance: a verbatim mention is off the question."""
    item = EvidenceItem(evidence_id="E1", kind="chunk", text=JEHLOMAT, document_path="posts/jehlomat.md",
                        source_id="S1", commit="c" * 40, chunk_id="posts/jehlomat.md#0", title="Předání projektu")
    gate = relevance_gate("Co je Jehlomat?", [item])
    mention = "Práce na Jehlomatu rozhodně nekončí."
    assert claim_relevance(gate, Claim(text=mention, evidence=("E1",), quote=mention), [item]) == [
        "the question asks what its subject is; the quote does not define it"]
    assert claim_relevance(gate, Claim(text="Jehlomat je aplikace.", evidence=("E1",), quote=DEFINING), [item]) == []


def test_definitions_over_http(blog: dict[str, Any], hash_embedder: Any) -> None:
    async def scenario() -> None:
        server = TestServer(create_app(blog["store"], embedder=hash_embedder, poll_interval=0.1), host="127.0.0.1")
        await server.start_server()
        try:
            async with aiohttp.ClientSession() as http:
                url = f"http://127.0.0.1:{server.port}/answer"
                async with http.post(url, json={"query": "Co je Zlatomat?"}) as resp:
                    body = await resp.json()
                assert resp.status == 200
                assert (body["status"], body["reason"], body["engine"]) == ("no_answer", "insufficient_evidence",
                                                                            "text")
                async with http.post(url, json={"query": "Co je Jehlomat?"}) as resp:
                    body = await resp.json()
                assert resp.status == 200 and body["status"] == "ok"
                assert body["claims"][0]["text"].startswith("A tak v roce 2014 vznikl Jehlomat – aplikace")
        finally:
            await server.close()

    asyncio.run(scenario())


@pytest.mark.slow
def test_definitions_on_the_real_blog(tmp_path: Path, hash_embedder: Any) -> None:
    """The new user's questions on the Czech blog: a defining sentence, never a mere mention."""
    with real_blog(tmp_path, hash_embedder) as bundle:
        expected = {
            "Co je Jehlomat?": "vznikl Jehlomat – aplikace",
            "Co je UNIPA?": "Jsme Unie porodních asistentek, z. s. (UNIPA)",
            "Co je Nezisk.Digital?": "Nezisk.Digital je",
            "What is Česko.Digital?": "Česko.Digital je",
        }
        for question, words in expected.items():
            body = ask(bundle, question)
            assert body["status"] == "ok" and words in body["answer"], (question, body["answer"])
            assert "**" not in body["answer"]
        for question in ("Co je Zlatomat?", "What is Kubernetes?"):
            body = ask(bundle, question)
            assert (body["status"], body["reason"], body["engine"]) == ("no_answer", "insufficient_evidence", "text")


@pytest.mark.parametrize("question", ["Co je Code for Romania?", "Kolik lidí pracuje pro Code for Romania?"])
def test_a_question_in_the_pages_answers_nothing(question: str) -> None:
    """An interviewer's question quoted from the pages states nothing (a new user got one as a definition)."""
    asked = "Kolik lidí vlastně na Code for Romania dělá na plný úvazek a kolik z nich je placených?"
    stated = "Code for Romania je největší evropská organizace Code for, má 30 lidí na plný úvazek."
    item = EvidenceItem(evidence_id="E1", kind="chunk", text=f"{asked} {stated}", document_path="posts/cfr.md",
                        source_id="S1", commit="c" * 40, chunk_id="posts/cfr.md#0", title="Rozhovor")
    gate = relevance_gate(question, [item])
    for quote in (asked, f"„{asked}“", f"**{asked}**"):
        assert "the quote is itself a question; it states nothing" in \
            claim_relevance(gate, Claim(text=quote, evidence=("E1",), quote=quote), [item])
    assert claim_relevance(gate, Claim(text=stated, evidence=("E1",), quote=stated), [item]) == []


def test_the_thing_an_english_question_asks_for_must_be_named() -> None:
    """"What is the capital of X?" is not answered by a sentence that only names X (a new user got a
    sentence about Code for Australia, marked supported)."""
    assert question_focus("What is the capital of Australia?").thing == "capital"
    text = ("Zde je příklad dokumentu, který vytvořila komunita Code for Australia. "
            "Canberra is the capital of Australia.")
    item = EvidenceItem(evidence_id="E1", kind="chunk", text=text, document_path="posts/cfa.md",
                        source_id="S1", commit="c" * 40, chunk_id="posts/cfa.md#0", title="Code for All")
    gate = relevance_gate("What is the capital of Australia?", [item])
    wrong = "Zde je příklad dokumentu, který vytvořila komunita Code for Australia."
    assert claim_relevance(gate, Claim(text=wrong, evidence=("E1",), quote=wrong), [item])
    right = "Canberra is the capital of Australia."
    assert claim_relevance(gate, Claim(text=right, evidence=("E1",), quote=right), [item]) == []

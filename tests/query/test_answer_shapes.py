"""What an answer must look like for the question asked (helper answers4: wrong answers marked supported).

A count question "Kolika školám …?" needs a number of schools; a when question a time expression that a
reader sees (the year in a link's address dates nothing), and a link alone states nothing; a definition
question ("Co to vlastně je X?", "Co je projekt X od Y?", "Co je X, který pořádá Y?", "What is Code for
Z?") a sentence that defines X (naming Y too), not one that only mentions X, ranks it ("X byl prvním z
projektů") or repeats the kind the question names ("úspěšným projektem X"); a who question a quote naming
someone the question does not; a count or time question a number the question does not give itself.
Real Git repo in tmp_path, real hash-64 bundle (pages written for the tests, not taken from the corpora).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from artifacts.text.words import word_set
from query.answer.asked import asks_people, asks_person, count_focus
from query.answer.evidence import Claim, EvidenceItem
from query.answer.relevance import claim_relevance, names_someone, relevance_gate, repeats_numbers
from query.answer.sentences import carries_value, defines, link_only
from query.question import definition_question, question_focus
from tests.conftest import RepoBuilder
from tests.query.answer_fixtures import ask_extractive, built_blog

SCHOOLS_AIM = "Projekt Tabule pomohl školám zprovoznit distanční výuku a pomáhá jim dál."
SCHOOLS = "Projekt Tabule pomohl více než 600 školám."
LINK = "**> [Přečti si, proč se mění vedení](https://example.org/2023/12/novy-ceo-spolku-brambor)**"
FAREWELL = "Červen byl pro nás měsícem rozloučení s úspěšným projektem Zlatá síť."
NET = "Zlatá síť je celorepubliková mapa nabídek a poptávek pomoci."
ASKED = "Kdykoliv se mě někdo zeptá: „Co vlastně děláš?“, začnu vysvětlovat, co to civic-hack je."
CIVIC = "Civic-hack je o vytváření občanských nástrojů, které pomáhají státu i lidem."
INCLUSION = "Projekt Modrá inkluze od spolku Brambor jsme rádi podpořili, protože mapuje zranitelné skupiny."
GAME = "Deskovka Mastermind – hra pro dva hráče, kteří hádají barvy."
SERIES = "Spolek Brambor pořádá vlastní sérii Mastermind – setkání lidí z oboru nad jedním problémem."
TEAM = "Web spolku Brambor má na starosti dedikovaný tým."
PERSON = "Web spolku Brambor má na starosti Jana Veselá."
EXPECTED = "Na první setkání spolku Brambor jsme čekali asi 60–70 lidí."
FIRST = "Cityvizor byl prvním z projektů, který jsme v Brambor vzali na starost."
CITY = "Aplikace Cityvizor, která přehledně zobrazuje hospodaření obcí, je v provozu od roku 2016."


def _repo(root: Path) -> RepoBuilder:
    repo = RepoBuilder(root / "blog")
    repo.write("posts/tabule.md", "---\ntitle: Rok s Tabulí\n---\n" + SCHOOLS_AIM + " " + SCHOOLS + "\n")
    repo.write("posts/vedeni.md", "---\ntitle: Spolek Brambor vede nový CEO Petr Malý\n---\n" + LINK + "\n")
    repo.write("posts/cerven.md", "---\ntitle: Co se dělo v červnu\n---\n" + FAREWELL + "\n")
    repo.write("posts/zlata-sit.md", "---\ntitle: Mapa pomoci\n---\n" + NET + "\n")
    repo.write("posts/civic.md", "---\ntitle: Civic-hack\n---\n" + ASKED + " " + CIVIC + "\n")
    repo.write("posts/inkluze.md", "---\ntitle: Modrá inkluze\n---\n" + INCLUSION + "\n")
    repo.write("posts/hra.md", "---\ntitle: Hry\n---\n" + GAME + "\n")
    repo.write("posts/mastermind.md", "---\ntitle: Mastermind\n---\n" + SERIES + "\n")
    repo.write("posts/web.md", "---\ntitle: Kdo dělá web\n---\n" + TEAM + " " + PERSON + "\n")
    repo.write("posts/setkani.md", "---\ntitle: První setkání\n---\n" + EXPECTED + "\n")
    repo.write("posts/cityvizor.md", "---\ntitle: Cityvizor\n---\n" + FIRST + " " + CITY + "\n")
    repo.commit("posts")
    return repo


@pytest.fixture(scope="module")
def blog(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("shapes")
    yield from built_blog(_repo(root).path, root / "store", hash_embedder)


def ask(bundle: Any, question: str) -> dict[str, Any]:
    return ask_extractive(bundle, question, True)


def _quotes(body: dict[str, Any]) -> list[str]:
    return [c["evidence"][0]["quote"] for c in body["claims"]]


def _item(text: str, title: str = "Brambor") -> EvidenceItem:
    return EvidenceItem(evidence_id="E1", kind="chunk", source_id="S1", chunk_id="p#0", document_path="p.md",
                        title=title, heading_path=(), source_url=None, commit="0" * 40, text=text,
                        tokens=len(text.split()))


def _why(question: str, quote: str, title: str = "Brambor", **gate: Any) -> list[str]:
    item = _item(quote, title)
    return claim_relevance(relevance_gate(question, [item], **gate), Claim(quote, ("E1",), quote), [item])


# -- what a question asks --------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "nouns"), [
    ("Kolika školám pomohl projekt Tabule?", ("skolam",)),
    ("Koľkým ľuďom pomohol projekt Tabule?", ("ludom",)),
    ("Kolik lidí pomohlo?", ("lidi",)),
])
def test_every_case_of_the_count_word_asks_a_count(question: str, nouns: tuple[str, ...]) -> None:
    focus = count_focus(question)
    assert question_focus(question).kind == "count" and focus is not None and focus.nouns == nouns


@pytest.mark.parametrize(("question", "subject", "names", "qualifier"), [
    ("Co to vlastně je civic-hack?", "civic-hack", ("civic-hack",), ()),
    ("What actually is Jehlomat?", "Jehlomat", ("jehlomat",), ()),
    ("Čo je projekt Modrá knižnica od Česko.Digital?", "projekt Modrá knižnica", ("modra", "kniznica"),
     ("cesko.digital",)),
    ("Co je Mastermind, který pořádá Česko.Digital?", "Mastermind", ("mastermind",), ("cesko.digital",)),
    ("What is Code for Romania?", "Code for Romania", ("code", "for", "romania"), ()),
    ("Co byl projekt Dáme roušky?", "projekt Dáme roušky", ("dame", "rousky"), ()),
    # where X is qualifies it like "od Y" ("locations" in query/asked.yaml); "téma" is a noun of its kind
    ("What is Mastermind at Česko.Digital?", "Mastermind", ("mastermind",), ("cesko.digital",)),
    ("Čo je téma Detekcia hoaxov na wiki záverečných prác?", "téma Detekcia hoaxov", ("detekcia", "hoaxov"), ()),
    ("Co je Jehlomat v praxi?", "Jehlomat", ("jehlomat",), ()),      # a place named by nothing: no qualifier
    ("What is GitHub on Windows?", "GitHub", ("github",), ("windows",)),   # "on" is a word, not YAML's true
])
def test_definition_frames(question: str, subject: str, names: tuple[str, ...], qualifier: tuple[str, ...]) -> None:
    found = definition_question(question)
    assert found is not None and (found.subject, found.names, found.qualifier) == (subject, names, qualifier)


@pytest.mark.parametrize("question", ["Kdo je zakladatelem Česko.Digital?", "Co je v zadání?",
                                      "What is the capital of Australia?", "Co je nového v Česko.Digital?"])
def test_no_definition_frame(question: str) -> None:
    assert definition_question(question) is None


@pytest.mark.parametrize(("question", "sentence", "strength"), [
    ("Co je Cityvizor?", FIRST, 1),                                     # ranked among others: kind only
    ("Co je Cityvizor?", CITY, 4),
    ("What is Vote Monitor?", "Vote Monitor was our third project.", 1),
    ("Co byl projekt Zlatá síť?", FAREWELL, 0),                         # the kind the question names itself
    ("Co byl projekt Zlatá síť?", NET, 4),
    ("Co je Kreslomat?", "Představili jsme mobilní aplikaci Kreslomat pro děti.", 1),
    ("čo je umapa", "Takové výsledky má Umapa, kterou dnes rozvíjí 18 dobrovolníků.", 0),  # others act on it
    ("čo je umapa", "Spolupracujeme s Umapa, která pomáhá lidem z Ukrajiny.", 2),
    ("čo je umapa", "Tereza Vaisová – marketingová koordinátorka projektu Umapa:", 0),  # where she works
    ("What is Code for Romania?", "Olivia is the COO of Code for Romania, a non-profit organization founded "
                                  "in 2016.", 3),
    ("What is Code for Romania?", "Code for Romania has been running for about four years.", 0),
])
def test_what_defines_a_subject(question: str, sentence: str, strength: int) -> None:
    definition = definition_question(question)
    assert definition is not None and defines(definition, sentence) == strength


def test_a_link_states_nothing() -> None:
    assert link_only(LINK) and link_only("- [[Nové vedení]]")
    assert not link_only("Přečti si [článek](https://example.org) o vedení.")
    assert not carries_value("time", LINK)                              # the 2023 of its address is no date
    assert carries_value("time", "Od [ledna 2024](https://example.org) vede spolek Petr Malý.")


@pytest.mark.parametrize(("question", "person"), [
    ("Kdo má na starosti web?", True), ("A kdo vede Brambor?", True), ("Who runs the web?", True),
    ("Which member of the board leads OSF?", True), ("Který člen rady vede OSF?", True),
    ("Which team won the hackday?", False), ("Co dělá Brambor?", False),
])
def test_questions_asking_for_a_person(question: str, person: bool) -> None:
    assert asks_person(question) is person


def test_who_all_asks_for_two_names() -> None:
    """"Kdo všechno patří k zakládajícímu triu?" is not answered by a sentence naming one founder."""
    assert asks_people("kdo vsechno patri k zakladajicimu triu spolku Brambor?")
    assert not asks_people("Kdo tvoří zakládající trio spolku Brambor?")
    asked = word_set("patri zakladajicimu triu brambor cesko.digital")
    one = "S Janem Novákem se známe, a když Česko.Digital zakládal, často jsme o tom mluvili."
    three = "Spolek Brambor založili Jan Novák, Eva Malá a Petr Veselý."
    assert names_someone(asked, one) and not names_someone(asked, one, 2)   # "Česko.Digital" is asked
    assert names_someone(asked, three, 2)
    assert not names_someone(asked, "Když zakládal Jan Novák, tvůrce Elasticsearch, svou firmu, oslovil mě.", 2)
    assert "the question asks who all; the quote names fewer than two people" in _why(
        "Kdo všechno patří k zakládajícímu triu Česko.Digital?", one, "Zakládající trio Česko.Digital")


def test_naming_someone_the_question_does_not() -> None:
    asked = word_set("eve pavlikove prevzal funkci ceo brambor")
    assert names_someone(asked, "Po Evě Pavlíkové převzal funkci Jan Kotara.")
    assert not names_someone(asked, "Funkci CEO převzala Eva Pavlíková.")          # only whom it names
    assert not names_someone(asked, "We have a team of UX designers and I’m going to call them.")
    # "who wrote the case study about X?" is not answered by a sentence of it naming only the organisation
    assert not names_someone(word_set("who wrote the case study about zachran obed"),
                             "Jak se projekt do komunity Česko.Digital dostal, si povíme v případové studii.")
    assert not repeats_numbers("Kolik lidí přišlo, když jsme čekali 60-70?", "Kolik? Přišlo 150 lidí.")
    assert repeats_numbers("Kolik lidí přišlo, když jsme čekali 60-70?", EXPECTED)


# -- the checker (every generator's claims) --------------------------------------------------------


def test_the_checker_rejects_answers_of_the_wrong_shape() -> None:
    assert "the quote is only a link; it states nothing" in _why("Od kdy vede Brambor Petr Malý?", LINK)
    assert "the question asks for a date or time; the quote states none" in _why(
        "Od kdy vede Brambor Petr Malý?", LINK)
    assert any("no number of the quote counts them" in d for d in _why("Kolika školám pomohl projekt Tabule?",
                                                                       SCHOOLS_AIM))
    assert _why("Kolika školám pomohl projekt Tabule?", SCHOOLS) == []
    assert "the quote only repeats numbers the question gives" in _why(
        "Kolik lidí přišlo na první setkání spolku Brambor, když jsme čekali 60-70?", EXPECTED)
    assert "the question asks who; the quote names no one it does not already name" in _why(
        "Kdo má na starosti web spolku Brambor?", TEAM)
    assert _why("Kdo má na starosti web spolku Brambor?", PERSON) == []
    assert "the question asks what its subject is; the quote does not define it" in _why(
        "Co byl projekt Zlatá síť?", FAREWELL)
    game = _item(GAME, title="Hry")
    gate = relevance_gate("Co je Mastermind, který pořádá Brambor?", [game])
    assert "the question asks about its subject as qualified by a name; the quote and its headings do not " \
           "name it" in claim_relevance(gate, Claim(GAME, ("E1",), GAME), [game])
    series = _item(SERIES, title="Mastermind")
    assert claim_relevance(relevance_gate("Co je Mastermind, který pořádá Brambor?", [series]),
                           Claim(SERIES, ("E1",), SERIES), [series]) == []


def test_the_thing_asked_for_is_not_all_a_quote_may_share() -> None:
    """"Which team won the first Brambor hackday?" is not answered by a sentence that names a team only,
    however rare "team" is in the pages, nor when a graph matched "team" as someone's name."""
    quote = "We have a dedicated team that builds prototypes."
    weights = {"team": 6.0, "brambor": 1.0, "hackday": 2.0}
    for ignore in ((), ("team",)):
        details = _why("Which team won the first Brambor hackday?", quote, "Code for Romania", ignore=ignore,
                       weights=weights)
        assert "the quote names the thing the question asks for, but nothing of what it asks about" in details


# -- end to end over a real Git repo ---------------------------------------------------------------


def test_a_count_in_any_case_needs_its_number(blog: dict[str, Any]) -> None:
    body = ask(blog["bundle"], "Kolika školám pomohl projekt Tabule zprovoznit distanční výuku?")
    assert (body["status"], _quotes(body)) == ("ok", [SCHOOLS])


def test_a_when_question_is_not_answered_by_a_link(blog: dict[str, Any]) -> None:
    body = ask(blog["bundle"], "Od kdy vede spolek Brambor jako CEO Petr Malý?")
    assert (body["status"], body["reason"]) == ("no_answer", "insufficient_evidence")


def test_definition_questions_get_a_definition(blog: dict[str, Any]) -> None:
    assert _quotes(ask(blog["bundle"], "Co byl projekt Zlatá síť?")) == [NET]
    assert _quotes(ask(blog["bundle"], "Co to vlastně je civic-hack?")) == [CIVIC]
    assert _quotes(ask(blog["bundle"], "Co je Mastermind, který pořádá Brambor?")) == [SERIES]
    assert _quotes(ask(blog["bundle"], "Co je Cityvizor?")) == [CITY]
    body = ask(blog["bundle"], "Čo je projekt Modrá knižnica od spolku Brambor?")   # no such project
    assert (body["status"], body["reason"]) == ("no_answer", "insufficient_evidence")


def test_a_who_question_gets_a_name(blog: dict[str, Any]) -> None:
    body = ask(blog["bundle"], "Kdo má na starosti web spolku Brambor?")
    assert (body["status"], _quotes(body)) == ("ok", [PERSON])


def test_a_count_the_question_gives_answers_nothing(blog: dict[str, Any]) -> None:
    body = ask(blog["bundle"], "Kolik lidí nakonec přišlo na první setkání spolku Brambor, když jsme čekali 60-70?")
    assert (body["status"], body["reason"]) == ("no_answer", "insufficient_evidence")


"""Graph questions read simplemma's lemmas from the lexicon files a build prepares (artifacts.lexicon),
not from dictionaries decoded per process, and answer exactly as with simplemma's own dictionaries."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import artifacts.lexicon as lexicon
from artifacts.graphmap import lexicon_languages, preset
from artifacts.lexicon import Lemmas, LexiconFactory
from indexer.build import build_bundle
from query.bundle import open_bundle
from query.graph import words as graph_words
from query.graph.dispatch import answer_graph
from tests.conftest import RepoBuilder
from tests.query.test_graph import write_wiki

QUESTIONS = [
    "Aké práce napísal Ján Holp?",
    "Kto viedol bakalársku prácu Ivany Verešovej?",
    "Koľko bakalárskych prác vzniklo v roku 2019?",
    "Ktoré stránky odkazujú na stránku Ján Holp?",
    "Kteří studenti mají tag nlp?",
    "Which theses did Martin Kováč write?",
    "Kto napísal prácu o znalostných grafoch?",
]


def _use(lemmas: Lemmas, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lexicon, "_DEFAULT", lemmas)
    graph_words._lemmas.cache_clear()  # forms cached per process: computed again from these lemmas


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> Iterator[dict[str, Any]]:
    """The thesis wiki of test_graph, built with ``$GITRAG_CACHE_DIR`` in a new folder."""
    tmp = tmp_path_factory.mktemp("lexiconwiki")
    repo = RepoBuilder(tmp / "repo")
    write_wiki(repo)
    commit = repo.commit("wiki")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GITRAG_CACHE_DIR", str(tmp / "cache"))
        patch.setattr(lexicon, "_DEFAULT", None)  # made again over the new cache directory
        result = build_bundle(repo.path, tmp / "store", commit, embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, load_model=False)
    yield {"bundle": bundle, "cache": tmp / "cache" / "lexicons"}
    bundle.close()
    graph_words._lemmas.cache_clear()


def test_a_build_prepares_the_lexicons_of_its_graph_questions_and_answer_profiles(built: dict[str, Any]) -> None:
    from artifacts.text.profile import available, load_profile

    names = sorted(p.name.split("-")[0] for p in built["cache"].iterdir())
    assert sorted(lexicon_languages(preset("thesis-wiki"))) == ["cs", "en", "sk"]
    # the answer path lemmatises in every profile's language: a server's first answer must not write one
    profiles = {code for code in (load_profile(c).simplemma for c in available()) if code}
    assert names == sorted({"cs", "en", "sk"} | profiles) and "pl" in names


def test_graph_answers_from_the_lexicons_are_simplemmas_and_decode_no_dictionary(
        built: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from simplemma.strategies import DefaultDictionaryFactory

    decoded: list[str] = []
    real = DefaultDictionaryFactory.get_dictionary

    def spy(self: DefaultDictionaryFactory, lang: str) -> Any:
        decoded.append(lang)
        return real(self, lang)

    monkeypatch.setattr(DefaultDictionaryFactory, "get_dictionary", spy)
    from_files = Lemmas(LexiconFactory(built["cache"]))
    _use(from_files, monkeypatch)
    answers = [answer_graph(built["bundle"], {"question": q}) for q in QUESTIONS]
    assert decoded == []  # not one dictionary of simplemma decoded for seven questions in three languages
    assert from_files.factory.sources == {"sk": "file", "cs": "file", "en": "file"}

    in_memory = Lemmas(LexiconFactory(None))  # simplemma's own decoded dictionaries
    _use(in_memory, monkeypatch)
    assert [answer_graph(built["bundle"], {"question": q}) for q in QUESTIONS] == answers
    assert sorted(set(decoded)) == ["cs", "en", "sk"]
    # the lemmas matter: "viedol" -> viesť (supervisor), "odkazujú" -> odkazovať (links), "napísal", "mají"
    assert [a.get("intent") for a in answers] == ["works_of_person", "supervisor_of_work", "unsupported", "links_to",
                                                  "persons_with_tag", "works_of_person", "unsupported"]


SAMPLE = {
    "sk": ["napísal", "prácu", "odkazujú", "stránky", "Verešovej", "bakalárskych", "vzniklo", "znalostných",
           "grafoch", "Kto", "viedol", "2019", "e-mail", "Holp"],
    "cs": ["Kteří", "studenti", "mají", "napsal", "prací", "odkazují", "sešlo", "vybudoval", "diplomové"],
    "en": ["Which", "theses", "did", "write", "pages", "link", "Open", "Data", "Day", "don't"],
}


def test_lemmas_and_known_words_equal_simplemmas_in_each_language(built: dict[str, Any]) -> None:
    import simplemma

    lemmas = Lemmas(LexiconFactory(built["cache"]))
    every = [w for ws in SAMPLE.values() for w in ws]  # each language's words, and the other languages' too
    for lang in SAMPLE:
        assert [lemmas.lemmatize(w, lang) for w in every] == [simplemma.lemmatize(w, lang=lang) for w in every]
        assert [lemmas.is_known(w, lang) for w in every] == [simplemma.is_known(w, lang=lang) for w in every]
    assert lemmas.factory.sources == {"sk": "file", "cs": "file", "en": "file"}


def test_a_cache_directory_that_cannot_be_written_does_not_fail_a_build(
        tmp_path: Path, hash_embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would be")
    monkeypatch.setenv("GITRAG_CACHE_DIR", str(blocked))
    monkeypatch.setattr(lexicon, "_DEFAULT", None)
    repo = RepoBuilder(tmp_path / "repo")
    repo.write("a.md", "# A\n\nText.\n")
    result = build_bundle(repo.path, tmp_path / "store", repo.commit(), embedder=hash_embedder)
    assert result.bundle_path.is_dir() and blocked.is_file()

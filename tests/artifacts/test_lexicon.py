"""Lexicon files (artifacts.lexicon): simplemma's lemmas from a mapped file, the same as simplemma's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from artifacts.lexicon import Lemmas, Lexicon, LexiconFactory, write_lexicon

ENTRIES = {"práce": "práca", "prácu": "práca", "Zürich": "Zürich", "z": "z", "ž": "ž", "Z": "Z", "a-b": "a",
           "don't": "do", "日本": "日本", "": "empty"}


def test_a_written_lexicon_reads_back_every_entry_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "xx.lex"
    write_lexicon(path, ENTRIES, "source-1")
    lexicon = Lexicon(path, "source-1")
    assert dict(lexicon.items()) == ENTRIES
    assert len(lexicon) == len(ENTRIES)
    # keys are sorted as UTF-8 bytes, so "Z" < "z" < "ž" < "日本": a bisect finds each one
    assert list(lexicon) == sorted(ENTRIES, key=lambda k: k.encode("utf-8"))
    assert lexicon.get("prácu") == "práca" and lexicon["Zürich"] == "Zürich"
    for missing in ("prac", "práceX", "ZZ", "{", "žž", "\U0010ffff"):
        assert lexicon.get(missing) is None and missing not in lexicon
    with pytest.raises(KeyError):
        lexicon["nie"]  # noqa: B018


def test_a_file_of_another_source_or_cut_short_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "xx.lex"
    write_lexicon(path, ENTRIES, "source-1")
    with pytest.raises(ValueError, match="another source"):
        Lexicon(path, "source-2")
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with pytest.raises(ValueError, match="truncated"):
        Lexicon(path, "source-1")
    path.write_bytes(b"not a lexicon file at all")
    with pytest.raises(ValueError, match="not a lexicon"):
        Lexicon(path, "source-1")


WORDS = ["Open", "Data", "Day", "Ministry", "Defence", "running", "children", "better", "don't", "well-known",
         "Grace", "Hopper", "2021", "3rd", "students'", "Theses", "XYZZYQ", "é"]


def test_english_lemmas_and_known_words_are_simplemmas(tmp_path: Path) -> None:
    import simplemma

    lemmas = Lemmas(LexiconFactory(tmp_path / "lexicons"))
    assert [lemmas.lemmatize(w, "en") for w in WORDS] == [simplemma.lemmatize(w, lang="en") for w in WORDS]
    assert [lemmas.is_known(w, "en") for w in WORDS] == [simplemma.is_known(w, lang="en") for w in WORDS]
    assert lemmas.factory.sources == {"en": "file"}
    assert [p.name.split("-")[0] for p in (tmp_path / "lexicons").iterdir()] == ["en"]
    # a second factory (another process) opens the file that is there
    again = LexiconFactory(tmp_path / "lexicons")
    assert again.prepare("en") and Lemmas(again).lemmatize("children", "en") == simplemma.lemmatize("children", "en")
    assert again.sources == {"en": "file"}


def test_an_unknown_language_fails_as_in_simplemma(tmp_path: Path) -> None:
    import simplemma

    lemmas = Lemmas(LexiconFactory(tmp_path))
    with pytest.raises(ValueError):
        simplemma.lemmatize("word", lang="xx")
    for _ in range(2):  # the second time from the factory's memory of the failure
        with pytest.raises(ValueError):
            lemmas.lemmatize("word", "xx")
    with pytest.raises(ValueError):
        lemmas.is_known("word", "../en")
    assert not LexiconFactory(tmp_path).prepare("xx") and list(tmp_path.iterdir()) == []


def test_without_a_writable_cache_the_lemmas_come_from_simplemmas_dictionary(tmp_path: Path) -> None:
    import simplemma

    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    for factory in (LexiconFactory(blocked / "lexicons"), LexiconFactory(None)):
        lemmas = Lemmas(factory)
        assert [lemmas.lemmatize(w, "en") for w in WORDS] == [simplemma.lemmatize(w, lang="en") for w in WORDS]
        assert factory.sources == {"en": "memory"}
        assert not factory.prepare("en")


def test_a_damaged_file_is_written_again(tmp_path: Path) -> None:
    factory = LexiconFactory(tmp_path)
    assert factory.prepare("en")
    (path,) = tmp_path.iterdir()
    path.write_bytes(path.read_bytes()[:100])
    fresh = LexiconFactory(tmp_path)
    assert Lemmas(fresh).lemmatize("children", "en") == "child"
    assert fresh.sources == {"en": "file"} and path.stat().st_size > 1_000_000


def test_a_temporary_file_a_killed_writer_left_is_removed_when_the_next_one_writes(tmp_path: Path) -> None:
    import os
    import time

    factory = LexiconFactory(tmp_path)
    path = factory._path("en")
    assert path is not None
    stale, fresh = (path[0].with_name(path[0].name + suffix) for suffix in (".abc.tmp", ".def.tmp"))
    for leftover in (stale, fresh):
        leftover.write_bytes(b"half a lexicon")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert factory.prepare("en")
    assert not stale.exists() and fresh.exists()  # a recent one may be another writer's, still writing

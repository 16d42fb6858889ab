"""Language profiles (artifacts/text/profiles/*.yaml) load, are well-formed and drive one detector."""

from __future__ import annotations

import pytest

from artifacts.text.profile import ANSWER_TYPES, ProfileError, _profile_from, available, detect_language, load_profile

CLASSES = ("negation", "copula", "article", "conjunction_and", "conjunction_or", "conjunction_but_not")


def test_the_four_profiles_are_installed_and_complete() -> None:
    assert {"sk", "cs", "en", "de"} <= set(available())
    for code in available():
        prof = load_profile(code)
        assert prof.code == code
        for name in CLASSES:
            assert prof.has_class(name), (code, name)
        assert set(prof.question_words.values()) <= set(ANSWER_TYPES)
        assert len(prof.function_words) >= 40, code
        assert prof.number_words and all(isinstance(v, int) for v in prof.number_words.values())
        assert len(prof.months) >= 12 and len(prof.weekdays) >= 7


def test_entries_are_folded_and_prefixes_kept() -> None:
    de = load_profile("de")
    assert "funf" in de.number_words and de.number_words["funf"] == 5
    assert "marz" in de.months
    sk = load_profile("sk")
    assert sk.matches("negation", "nemusi")  # "ne*" is a prefix entry
    assert not load_profile("en").matches("negation", "nemusi")


@pytest.mark.parametrize("text, code", [
    ("Wer leitet den Hotfix-Prozess und wann wird er gestartet?", "de"),
    ("Who leads the hotfix process and when does it start?", "en"),
    ("Kto vedie proces opráv a kedy sa začína?", "sk"),
    ("Kdo řídí proces oprav a kdy se začíná?", "cs"),
    ("Die Größe der Datei ist auf 20 MB begrenzt.", "de"),
])
def test_detect_language(text: str, code: str) -> None:
    assert detect_language(text) == code


def test_detect_language_abstains_on_nothing_to_go_by() -> None:
    assert detect_language("GPT-2 42") is None
    assert detect_language("") is None


def test_malformed_profiles_are_typed_errors() -> None:
    with pytest.raises(ProfileError):
        load_profile("xx")
    with pytest.raises(ProfileError):
        _profile_from({"code": "en", "classes": {"negation": [True]}}, "t")  # unquoted `no` read as false
    with pytest.raises(ProfileError):
        _profile_from({"code": "en", "question_words": {"how many": "colour"}}, "t")
    with pytest.raises(ProfileError):
        _profile_from({"code": "en", "classes": {"negation": "not"}}, "t")

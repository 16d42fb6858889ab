"""Adding a language is adding a profile file: Polish (artifacts/text/profiles/pl.yaml) with no code for it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from artifacts.text.profile import available, detect_language, load_profile
from artifacts.text.words import content_words
from query.answer.asked import asks_person, count_focus
from query.question import analyse_question, definition_question, question_focus

ROOT = Path(__file__).resolve().parents[2]


def test_polish_is_installed_by_its_file() -> None:
    assert "pl" in available()
    assert load_profile("pl").pysbd == "pl"


@pytest.mark.parametrize("question, answer_type", [
    ("Kiedy została założona firma Allegro?", "time"),
    ("Ile osób pracuje w zespole wsparcia?", "count"),
    ("Gdzie znajduje się siedziba spółki?", "place"),
    ("Dlaczego serwer nie odpowiada?", "reason"),
    ("Kto kieruje zespołem wsparcia?", "person"),
    ("Co to jest Allegro?", "definition"),
])
def test_a_polish_question_is_polish_and_gets_its_answer_type(question: str, answer_type: str) -> None:
    assert detect_language(question) == "pl"
    analysis = analyse_question(question)
    assert analysis.language == "pl"
    assert analysis.answer_type == answer_type


def test_polish_function_words_are_no_content_words() -> None:
    words = content_words("Ile kosztuje licencja dla jednego użytkownika przez rok?")
    assert not {"ile", "dla", "przez"} & set(words)
    assert {"kosztuje", "licencja", "uzytkownika"} <= set(words)
    analysis = analyse_question("Kiedy została założona firma Allegro?")
    assert "kiedy" not in analysis.content_words and "allegro" in analysis.content_words


def test_the_polish_classes_drive_the_question_analysis() -> None:
    assert question_focus("Ile osób pracuje w zespole wsparcia?").kind == "count"
    focus = count_focus("Ile osób pracuje w zespole wsparcia?")
    assert focus is not None and focus.nouns == ("osob",)
    assert asks_person("Kto kieruje zespołem wsparcia?")
    definition = definition_question("Co to jest Allegro?")
    assert definition is not None and definition.kind == "thing" and definition.names == ("allegro",)


def test_no_python_code_names_polish() -> None:
    """Polish came as data only: no Python module of the packages holds the string "pl"."""
    for package in ("artifacts", "indexer", "query"):
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            assert not any(isinstance(n, ast.Constant) and n.value == "pl" for n in ast.walk(tree)), path

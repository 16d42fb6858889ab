"""A small Slovak thesis wiki plus an English operations page for the claim-level relevance tests."""

from __future__ import annotations

from tests.query.answer_wiki import student

BACA = student(
    "Denis Bača", "dp2021, bp2019, st2016",
    "## Bakalárska práca 2019\n\nNázov: Rozpoznávanie pomenovaných entít v administratívnych dokumentoch\n\n"
    "### Stretnutie 10.12.2018\n\nStav: Napísaná kapitola o rozpoznávaní pomenovaných entít, asi 3 strán.\n\n"
    "## Diplomová práca 2021\n\nNázov: Rozpoznávanie pomenovaných entít pomocou modelu Mistral 7B\n\n"
    "Zadanie:\n\n1. Vypracujte prehľad súčasných metód rozpoznávania pomenovaných entít.\n"
    "2. Vyhodnoťte navrhnuté riešenie pomocou metriky F1.\n\n"
    "Ciele:\n\n- Overiť použiteľnosť riešenia v praxi.\n- Zlepšiť F1 oproti základnému modelu.\n\n"
    "Výsledky: F1 0,77 na testovacej množine (základný model 0,68).\n\n"
    "### Stretnutie 18.3.2021\n\nStav:\n\n- Vypracovaný prehľad literatúry (31 článkov) o rozpoznávaní entít.\n"
    "- Natrénovaný prvý model.\n", tags="ner")
OPS = ("---\ntitle: Server operations\n---\n\n# Server operations\n\n## Backups\n\n"
       "Backups of the wiki server run every night at 02:30 UTC and are kept for 30 days. "
       "The restore procedure is tested once a month.\n\n## Monitoring\n\n"
       "Disk usage and certificate expiry are checked by the monitoring service.\n")


def write(repo) -> None:  # type: ignore[no-untyped-def]
    from artifacts.graphmap import PRESETS

    repo.write("graph-schema.yaml", PRESETS["thesis-wiki"])
    repo.write("pages/students/2016/denis_baca/README.md", BACA)
    repo.write("pages/ops/README.md", OPS)

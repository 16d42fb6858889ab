"""A how-to question gets the sentence that introduces a code block together with the block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from indexer.build import build_bundle
from query.answer.sentences import text_units
from query.bundle import open_bundle
from tests.conftest import RepoBuilder
from tests.query.answer_fixtures import ask_extractive

OPS = """---
title: Backups
---

# Backups

## Scheduling

The nightly backup of the archive can be scheduled with crontab:

```
0 2 * * * /usr/local/bin/archive-backup --target /srv/backup
```

The backup log is written to the journal.

## Restoring

Restores are done by the operations team on request.
"""


def test_a_code_block_is_one_unit_led_by_its_introduction() -> None:
    units = text_units(OPS.split("---\n", 2)[2])
    lead = next(u for u in units if u.text.endswith("crontab:"))
    code = next(u for u in units if u.kind == "code")
    assert lead.leads == code.list_id and code.text == "0 2 * * * /usr/local/bin/archive-backup --target /srv/backup"
    assert not any(u.kind == "code" and u.list_id != lead.leads for u in units)


def test_a_how_to_answer_carries_the_command(tmp_path: Path, hash_embedder: Any) -> None:
    repo = RepoBuilder(tmp_path / "repo")
    repo.write("ops/backups.md", OPS)
    repo.write("ops/other.md", "# Monitoring\n\nDisk usage is checked by the monitoring service every hour.\n")
    commit = repo.commit("ops")
    result = build_bundle(repo.path, tmp_path / "store", commit, embedder=hash_embedder)
    bundle = open_bundle(result.bundle_path, verify=False, embedder=hash_embedder)
    try:
        body = ask_extractive(bundle, "How do I schedule the nightly backup of the archive with crontab?")
    finally:
        bundle.close()
    assert body["status"] == "ok", body.get("reason")
    quotes = [ev["quote"] for c in body["claims"] for ev in c["evidence"]]
    assert any(q.endswith("crontab:") for q in quotes)
    assert "0 2 * * * /usr/local/bin/archive-backup --target /srv/backup" in quotes
    assert "/usr/local/bin/archive-backup" in body["answer"]

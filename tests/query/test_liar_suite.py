"""The liar suite (issue 24 item 7): a scripted model that keeps every quote verbatim and lies in the claim text.

A fake OpenAI-compatible and a fake Anthropic-compatible model (real HTTP on 127.0.0.1,
:mod:`tests.query.fake_llm`) answer ``POST /answer`` of a real server over a small wiki the test
builds (:mod:`tests.query.liar_wiki`) with one scripted claim per case, and repeat it in the repair
round.  Per lie class (negated claim, person swapped, number swapped, wrong number in words, year
swapped, supervisor as author, two pages merged, planted instruction obeyed / quoted) at least ten
cases; and, on a second small wiki, the second round's classes (numbers swapped inside one quote, a name
of the title for the person the quote names, a negation moved to the other clause, an instruction led by
whom it addresses): **0 lies delivered**.  Faithful paraphrases: at most 5 % rejected (delivered with their own
text, or with their quote as the text when the text says more than the quote's words).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from query.answer.binding import shown_quote
from query.config import AnswerConfig, ServerConfig
from query.server.app import create_app
from tests.query.fake_llm import Prompt, start_fake_llm
from tests.query.liar_wiki import LIES, Case, build_liar_wiki, cases

CASES = cases()
PROVIDERS = ("openai", "anthropic")


@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory, hash_embedder: Any) -> dict[int, dict[str, Any]]:
    return {n: build_liar_wiki(tmp_path_factory.mktemp(f"liarwiki{n}"), hash_embedder, n) for n in (1, 2)}


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold().rstrip(".") == " ".join(b.split()).casefold().rstrip(".")


async def _run(wiki: dict[str, Any], embedder: Any, provider: str, batch: list[Case]) -> list[dict[str, Any]]:
    fake, runner = await start_fake_llm()
    found: list[bool] = []
    current: list[Case] = []

    def respond(prompt: Prompt) -> str:
        case = current[0]
        ids: list[str | None] = []
        for quote in case.quotes:
            ids.append(prompt.holding(quote, case.text, [i for i in ids if i]))
        found.append(all(ids))
        claim: dict[str, Any] = {"text": case.text, "evidence": list(dict.fromkeys(i or "E1" for i in ids))}
        if len(case.quotes) > 1:
            claim["quotes"] = list(case.quotes)
        else:
            claim["quote"] = case.quotes[0]
        return json.dumps({"claims": [claim], "insufficient": False}, ensure_ascii=False)

    fake.responder = respond
    base = fake.openai_base_url if provider == "openai" else fake.anthropic_base_url
    settings = AnswerConfig(generator=provider, base_url=base, model="liar", api_key="k" * 40, cache_entries=0)
    app = create_app(wiki["store"], embedder=embedder, config=ServerConfig(answer=settings))
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    rows = []
    try:
        async with aiohttp.ClientSession() as http:
            for case in batch:
                current[:] = [case]
                found.clear()
                async with http.post(f"http://127.0.0.1:{server.port}/answer",
                                     json={"query": case.question, "debug": True}) as resp:
                    body = await resp.json()
                assert resp.status == 200, body
                texts = [c["text"] for c in body.get("claims") or []]
                attempts = (body.get("debug") or {}).get("attempts") or []
                first = attempts[0]["verdicts"][0] if attempts and attempts[0]["verdicts"] else {}
                rows.append({"case": case, "status": body["status"], "engine": body.get("engine"),
                             "texts": texts, "answer": body.get("answer"),
                             "quoted": bool(found) and all(found), "calls": len(found),
                             "reasons": tuple(first.get("reasons") or ()), "first_text": first.get("text")})
    finally:
        await server.close()
        await runner.cleanup()
    return rows


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("lie", [*LIES, "faithful"])
def test_liar_suite(wiki: dict[int, dict[str, Any]], hash_embedder: Any, provider: str, lie: str) -> None:
    batch = [c for c in CASES if c.lie == lie]
    assert len(batch) >= 10
    rows = [row for n in sorted({c.wiki for c in batch})
            for row in asyncio.run(_run(wiki[n], hash_embedder, provider, [c for c in batch if c.wiki == n]))]
    # a question the graph answers itself (two persons' titles, per person, from verified graph facts) never
    # reaches the model: it tests nothing of the checker and is left out; enough cases must remain
    rows = [r for r in rows if r["engine"] != "graph"]
    assert len(rows) >= 10
    # every case reached the model with the evidence its quotes stand in (else it would test retrieval)
    assert all(r["quoted"] for r in rows), [r["case"].question for r in rows if not r["quoted"]]
    outcome: Counter[str] = Counter()
    for row in rows:
        case: Case = row["case"]
        own = any(_same(t, case.text) for t in row["texts"])
        as_quote = any(_same(t, " ".join(shown_quote(q) for q in case.quotes)) for t in row["texts"])
        outcome["own text" if own else "as quote" if as_quote else "not delivered"] += 1
        for reason in row["reasons"] or ("ok",):
            outcome[f"first verdict: {reason}"] += 1
        if row["first_text"] not in (None, case.text):
            outcome["first verdict: text replaced by its quote"] += 1
        if lie != "faithful":
            assert not own, f"lie delivered: {case.text!r} ({row['reasons']})"
            assert row["answer"] is None or case.text.rstrip(".") not in row["answer"]
    print(f"\n[{provider}] {lie}: {len(rows)} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(outcome.items())))
    if lie == "faithful":
        rejected = outcome["not delivered"]
        assert rejected <= 0.05 * len(rows), [(r["case"].text, r["reasons"], r["status"]) for r in rows
                                              if not r["texts"]]

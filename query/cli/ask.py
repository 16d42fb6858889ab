"""``gitrag ask``: a thin click layer over :mod:`query.answer.pipeline` (the same body as ``POST /answer``)."""

from __future__ import annotations

import asyncio
from typing import Any

import click

from artifacts.errors import ArtifactError
from query.answer.evidence import FRONT_MATTER_SECTIONS
from query.cli.bundle_at import open_bundle_at
from query.cli.main import echo_body, fail
from query.errors import QueryError


def _front_matter_quotes(body: dict[str, Any]) -> dict[str, list[str]]:
    """Source id -> front-matter fields its claims quote (``description``: shown as ``[S1] path (description)``)."""
    out: dict[str, list[str]] = {}
    for claim in body.get("claims") or []:
        for ev in claim.get("evidence") or []:
            path = ev.get("heading_path") or []
            if len(path) == 1 and path[0] in FRONT_MATTER_SECTIONS and path[0] not in out.get(ev["source_id"], []):
                out.setdefault(ev["source_id"], []).append(path[0])
    return out


def _print_text(body: dict[str, Any]) -> None:
    head = body["status"] + (f" ({body['reason']})" if body["reason"] else "") + f"  engine={body['engine']}"
    click.echo(head)
    if body.get("answer"):
        click.echo(body["answer"])
    for candidate in body.get("candidates") or []:
        click.echo(f"  candidate: {candidate.get('person') or candidate.get('title')}  {candidate.get('path')}")
    for item in body.get("evidence") or []:
        where = " > ".join(item["heading_path"]) or item["title"] or ""
        click.echo(f"[{item['evidence_id']}] {item['chunk_id'] or item['document_path']}  {where}")
        click.echo("    " + item["text"].replace("\n", "\n    "))
    coverage = body.get("answer_coverage")
    if coverage:
        click.echo(f"coverage: {coverage['status']}" + "".join(f"\n  warning: {w}" for w in coverage["warnings"]))
    fields = _front_matter_quotes(body)
    for source in body["sources"]:
        click.echo(f"[{source['source_id']}] {source['document_path']}"
                   + "".join(f" ({f})" for f in fields.get(source["source_id"], ()))
                   + (f"  {source['source_url']}" if source.get("source_url") else ""))
    if body.get("truncated"):
        click.echo("truncated: " + ", ".join(body["truncation_reasons"]))


@click.command("ask")
@click.argument("question")
@click.option("--store", "store_dir", required=True, type=click.Path(file_okay=False), help="Bundle store directory.")
@click.option("--at", default=None, help="Revision as for `gitrag use` (default: CURRENT).")
@click.option("--generator", type=click.Choice(["extractive", "openai", "anthropic"]), default=None,
              help="Claim generator (default: extractive; openai/anthropic read GITRAG_LLM_* / ANTHROPIC_API_KEY).")
@click.option("--mode", type=click.Choice(["answer", "retrieve"]), default="answer", show_default=True,
              help="retrieve: print the evidence a generator would get, without generating.")
@click.option("--max-context-tokens", default=3000, show_default=True, type=click.IntRange(500, 12000),
              help="Evidence budget (tiktoken cl100k_base tokens).")
@click.option("--all", "include_unpublished", is_flag=True, help="Include pages with published: false.")
@click.option("--base-url", default=None, envvar="GITRAG_BASE_URL",
              help="Base URL for source_url (document path appended; {commit} becomes the answering commit).")
@click.option("--json", "as_json", is_flag=True, help="Print the same JSON as POST /answer.")
def ask_command(question: str, store_dir: str, at: str | None, generator: str | None, mode: str,
                max_context_tokens: int, include_unpublished: bool, base_url: str | None, as_json: bool) -> None:
    """Answer QUESTION with claims that cite the exact pages of the bundle, or say why not.

    Every claim passed the checker (its quote is verbatim in the cited evidence, its numbers and
    names occur there); exit status 0 for ok, no_answer and ambiguous, 1 for errors.
    """
    from query.answer.pipeline import answer, parse_answer_request
    from query.config import ServerConfig
    from query.search.request import SearchOptions

    try:
        payload: dict[str, Any] = {"query": question, "mode": mode, "max_context_tokens": max_context_tokens,
                                   "published_only": not include_unpublished}
        if generator:
            payload["generator"] = generator
        request = parse_answer_request(payload)
        chosen = None
        if mode == "answer":
            from query.answer.generators import make_generator

            settings = ServerConfig().answer
            chosen = make_generator(request.generator or settings.generator, settings.provider_settings())
        with open_bundle_at(store_dir, at, load_model=True) as bundle:
            body = asyncio.run(answer(bundle, request, SearchOptions(base_url=base_url), chosen))
    except (QueryError, ArtifactError) as exc:
        fail(exc, as_json)
        return
    echo_body(body, as_json, _print_text)

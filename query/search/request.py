"""The search request (``POST /search``, ``gitrag search``), its filter, and the server-side options."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator

from artifacts.fusion import FUSION_FIELDS
from query.contract import validate_request
from query.search.confidence import CONFIDENCE_DEPTH, CONFIDENCE_TOP_FLOOR, CONFIDENCE_Z

MAX_QUERY_CHARS = 1000


MAX_FILTER_VALUES = 64
"""Most values in one ``filter.tags``, ``filter.categories`` or ``filter.year`` list."""
MAX_FILTER_VALUE_CHARS = 200
"""Longest tag or category accepted in a filter (characters)."""
MAX_PATH_PREFIX_CHARS = 1000
"""Longest ``filter.path_prefix`` accepted (characters)."""


FilterValue = Annotated[str, Field(max_length=MAX_FILTER_VALUE_CHARS)]


class SearchFilter(BaseModel):
    """Restrict results to documents matching every given criterion (omitted = no restriction).

    ``path_prefix``: document path starts with this string (at most 1,000 characters); ``tags`` /
    ``categories``: the document has at least one of them (compared case- and diacritics-insensitively;
    at most 64 values of at most 200 characters); ``year``: the document's year is this one or one of
    these (at most 64).  The bounds keep a request's cost proportional to its size.
    """

    model_config = {"extra": "forbid"}

    path_prefix: str | None = Field(None, max_length=MAX_PATH_PREFIX_CHARS)
    tags: list[FilterValue] | None = Field(None, max_length=MAX_FILTER_VALUES)
    categories: list[FilterValue] | None = Field(None, max_length=MAX_FILTER_VALUES)
    year: int | Annotated[list[int], Field(max_length=MAX_FILTER_VALUES)] | None = None

    def is_empty(self) -> bool:
        """Return true when the filter restricts nothing."""
        return not (self.path_prefix or self.tags or self.categories or self.year is not None)

    def years(self) -> set[int] | None:
        """Return the accepted years, or ``None`` when the year is not restricted."""
        if self.year is None:
            return None
        return {self.year} if isinstance(self.year, int) else set(self.year)


class SearchRequest(BaseModel):
    """Body of ``POST /search`` and the options of ``gitrag search``.

    ``limit``: results returned (1..100); ``max_per_document``: results per document (1..100);
    ``published_only``: exclude documents whose front matter says ``published: false``;
    ``debug``: add per-arm ranks and scores to each result; ``filter``: a :class:`SearchFilter`.
    """

    # strict: "5", 5.0, true are not integers and "false" is not a boolean (no silent coercion).
    model_config = {"extra": "forbid", "strict": True}

    query: str
    limit: int = Field(10, ge=1, le=100)
    max_per_document: int = Field(3, ge=1, le=100)
    published_only: bool = True
    debug: bool = False
    filter: SearchFilter | None = None

    @field_validator("query", mode="before")
    @classmethod
    def _query_is_text(cls, value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError("query must be a string")
        return value


class SearchOptions(BaseModel):
    """Server-side retrieval settings (not per request).

    The fusion fields (:data:`artifacts.fusion.FUSION_FIELDS`) not given explicitly are taken from
    the bundle's fusion profile (``manifest.fusion``, chosen per embedder at build time, see
    :meth:`for_bundle`); the defaults below are the ``default`` profile, used for bundles without one.
    Fusion defaults (k = 5, vector weight 0.5, chunk level, anchor on BM25's first document) were
    chosen with ``bench/fusion_sweep.py`` as the setting with the smallest worst-case loss of hybrid
    nDCG@10 against the better arm on the dev sets with both the English MiniLM and the multilingual
    e5 arm (README, "Retrieval quality"); with RRF's usual k = 60 the gap between ranks 1 and 2 (0.0003) is so
    small that a weak arm reorders the top of a strong one.

    ``rrf_k``: RRF constant; ``fusion_level``: fuse chunk or document rankings (:func:`fuse_rankings`);
    ``bm25_weight`` / ``vector_weight``: per-arm RRF weights;
    ``prefix_weight`` / ``any_term_weight``: score scale of the looser BM25 strategies;
    ``candidates``: chunks taken from each arm; ``typo_tolerance``: expand words absent from the index
    by edit distance; ``anchor``: enable the lexical anchor; ``anchor_max_chunks``: a word is rare
    when at most this many chunks contain it; ``anchor_bm25_rank``: the anchored document must be
    among BM25's best this many documents (an inflected form that happens to be rare elsewhere must
    not override a better lexical match); ``vector_confidence``: scale the vector weight per query by
    :func:`vector_confidence` (an arm with no signal then counts for nothing, see there);
    ``confidence_z_none`` / ``confidence_z_full``: its z thresholds; ``confidence_top_floor`` /
    ``confidence_top_depth``: the least confidence when the dense arm's best document is among
    BM25's best ``confidence_top_depth`` documents (0 = off; see :func:`vector_confidence` and
    :data:`CONFIDENCE_TOP_FLOOR`);
    ``base_url``: prefix of ``source_url``.
    """

    rrf_k: int = Field(5, ge=1)
    fusion_level: Literal["chunk", "document"] = "chunk"
    bm25_weight: float = Field(1.0, ge=0)
    vector_weight: float = Field(0.5, ge=0)
    prefix_weight: float = Field(0.7, ge=0)
    any_term_weight: float = Field(0.5, ge=0)
    candidates: int = Field(100, ge=1)
    typo_tolerance: bool = True
    anchor: bool = True
    anchor_max_chunks: int = Field(8, ge=1)
    anchor_bm25_rank: int = Field(1, ge=1)
    vector_confidence: bool = True
    confidence_z_none: float = CONFIDENCE_Z[0]
    confidence_z_full: float = CONFIDENCE_Z[1]
    confidence_top_floor: float = Field(CONFIDENCE_TOP_FLOOR, ge=0, le=1)
    confidence_top_depth: int = Field(CONFIDENCE_DEPTH, ge=1)
    base_url: str | None = None

    def for_bundle(self, fusion: dict[str, Any] | None) -> SearchOptions:
        """Return these options with the fusion fields not set explicitly taken from a bundle's profile.

        ``fusion``: ``manifest.fusion`` (:mod:`artifacts.fusion`), or ``None`` (then ``self``).  A
        field is explicit when it was passed to the constructor or to ``model_copy(update=...)``;
        the result has every field explicit, so applying it twice changes nothing.
        """
        if not fusion:
            return self
        update = {k: v for k, v in fusion.items() if k in FUSION_FIELDS and k not in self.model_fields_set}
        if not update:
            return self
        return SearchOptions.model_validate({**self.model_dump(), **update})

    def retrieval_config(self) -> dict[str, Any]:
        """Return the settings that change rankings (everything but ``base_url``)."""
        return self.model_dump(exclude={"base_url"})


def parse_search_request(payload: Any) -> SearchRequest:
    """Validate a decoded JSON payload as a :class:`SearchRequest`.

    Raises :class:`InvalidQueryError` for a missing, non-string, empty or oversized query and
    :class:`InvalidRequestError` for any other problem (wrong types, unknown fields).
    """
    return validate_request(payload, SearchRequest, "query", MAX_QUERY_CHARS)

"""Fusion profiles: the hybrid-ranking settings chosen per embedding model, recorded in each bundle.

How much the dense arm may reorder BM25 depends on the model: a multilingual model (e5-small) that
reads the corpus's language should count about as much as BM25, while an English-only model
(MiniLM) on other scripts must not drag hybrid below BM25.  One set of constants cannot serve both,
so the builder looks the bundle's embedder up in :data:`PROFILES_FILE` (``fusion_profiles.json``,
data, not code: each profile's settings were chosen by ``bench/fusion_calibrate.py`` on dev splits,
see ``docs/retrieval-fusion.md``) and writes the chosen settings into ``manifest.json`` as
``fusion`` (feature 5).  A reader ranks with them, so a bundle keeps the ranking it was built with
when the table changes later; a bundle without the field (feature 4 or older) ranks with the
reader's built-in defaults, which are the ``default`` profile.

The settings are field values of :class:`query.search.request.SearchOptions` (see there for their
meaning); an operator's explicit option overrides the bundle's.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .config import EmbedderSpec

PROFILES_FILE = Path(__file__).with_name("fusion_profiles.json")
FUSION_FIELDS = ("rrf_k", "fusion_level", "bm25_weight", "vector_weight", "anchor", "anchor_bm25_rank",
                 "vector_confidence", "confidence_z_none", "confidence_z_full", "confidence_top_floor",
                 "confidence_top_depth")
"""The ranking settings a profile may set (``SearchOptions`` fields); any other key is refused."""


class FusionProfile(BaseModel):
    """One entry of the profile table: which embedders it serves and the settings it gives them.

    ``model_ids``: :attr:`EmbedderSpec.model_id` values it serves; ``fingerprints``: weight
    fingerprints (sha256 hex) it serves, checked first; ``settings``: ``SearchOptions`` field ->
    value (only :data:`FUSION_FIELDS`); ``measured``: where the figures that chose it are.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    model_ids: list[str] = Field(default_factory=list)
    fingerprints: list[str] = Field(default_factory=list)
    settings: dict[str, Any]
    measured: str = ""

    def manifest_value(self) -> dict[str, Any]:
        """Return what ``manifest.json`` records: ``{"profile": name, **settings}`` (sorted when written)."""
        return {"profile": self.name, **self.settings}


class ProfileTable(BaseModel):
    """The whole of ``fusion_profiles.json``: ``default`` for embedders no profile names, then ``profiles``."""

    model_config = ConfigDict(extra="forbid")

    default: FusionProfile
    profiles: list[FusionProfile] = Field(default_factory=list)


@cache
def load_profiles(path: Path = PROFILES_FILE) -> ProfileTable:
    """Read and check the profile table (``fusion_profiles.json``); cached per path.

    Raises ``ValueError`` when a profile sets a field outside :data:`FUSION_FIELDS`.
    """
    table = ProfileTable.model_validate(json.loads(path.read_text(encoding="utf-8")))
    for profile in (table.default, *table.profiles):
        unknown = set(profile.settings) - set(FUSION_FIELDS)
        if unknown:
            raise ValueError(f"fusion profile {profile.name!r} sets unknown fields {sorted(unknown)}")
    return table


def profile_for(spec: EmbedderSpec | None, table: ProfileTable | None = None) -> FusionProfile:
    """Return the profile for an embedder: the first whose ``fingerprints`` hold its fingerprint, else the
    first whose ``model_ids`` hold its model id, else the table's ``default`` (also for ``None``)."""
    table = table or load_profiles()
    if spec is not None:
        for profile in table.profiles:
            if spec.fingerprint in profile.fingerprints:
                return profile
        for profile in table.profiles:
            if spec.model_id in profile.model_ids:
                return profile
    return table.default

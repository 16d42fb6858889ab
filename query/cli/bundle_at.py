"""The bundle a query command reads: ``--at`` resolved to a bundle directory by the one resolver,
and that bundle opened for the length of one command (``gitrag ask``, ``gitrag graph``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the bundle stack (numpy, Whoosh, hnswlib) is imported when a command runs
    from query.bundle import OpenedBundle


def bundle_dir_at(store_dir: str, at: str | None) -> Path:
    """Return the bundle directory for revision ``at`` (as ``gitrag use`` accepts it), else CURRENT's.

    Resolved by the one resolver, :func:`artifacts.store.resolve_bundle_ref` (bundle id, sha, short
    sha, branch, tag, ``REV~N``, ``REV^``).

    :raises InvalidRevisionError, UnknownRevisionError, BundleNotFoundError: as that resolver.
    """
    from artifacts.store import Store, resolve_bundle_ref

    store = Store(store_dir)
    if at is None:
        return store.current_path()
    return resolve_bundle_ref(store, at).path


@contextlib.contextmanager
def open_bundle_at(store_dir: str, at: str | None, *, load_model: bool) -> Iterator[OpenedBundle]:
    """Open the bundle of revision ``at`` (else CURRENT's) for one command; it is closed when the block ends.

    The files are not checked against the manifest's hashes (``gitrag verify`` does).  ``load_model``:
    load the bundle's query embedder (waited for before the block starts).

    :raises InvalidRevisionError, UnknownRevisionError, BundleNotFoundError: as :func:`bundle_dir_at`.
    :raises EmbedderError, RetrievalUnavailableError: as :func:`query.bundle.open_bundle`.
    """
    from query.bundle import open_bundle

    bundle = open_bundle(bundle_dir_at(store_dir, at), verify=False, load_model=load_model)
    try:
        yield bundle
    finally:
        bundle.close()

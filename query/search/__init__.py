"""Retrieval: the search request, BM25 and vector arms, fusion, snippets, ranking metrics.

The library entry points (see ``docs/api.md``): :func:`search`, :func:`parse_search_request`,
:class:`SearchOptions`.
"""

from query.search.request import SearchOptions, parse_search_request
from query.search.response import search

__all__ = ["SearchOptions", "parse_search_request", "search"]

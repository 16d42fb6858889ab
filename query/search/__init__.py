"""Retrieval: the search request, BM25 and vector arms, fusion, snippets, ranking metrics."""

"""Evaluation: retrieval metrics over question sets and answer scoring (``gitrag eval``)."""

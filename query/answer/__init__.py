"""Checked answers: route, context, generators, attribution check, answerability score, repair loop."""

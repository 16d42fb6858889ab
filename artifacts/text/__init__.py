"""Language knowledge as data: one profile per language, one detector, one tokenizer and folding.

Used by the index and the question side alike (:mod:`artifacts.text.profile`).  No natural-language
word lives in Python code; the words are in ``profiles/<code>.yaml``.
"""

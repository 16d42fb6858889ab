"""Issue 27 (chunking cost): chunking a long pathological line costs time linear in its length.

tiktoken's BPE is superlinear in the length of one pre-tokenized piece (8x the piece, about 15-20x
the CPU), and a line of backticks, of ``[`` or of letters and digits without a space is one piece:
the chunker counted such a section whole up to five times and cut it after one encoding of the whole
text.  Now no call hands tiktoken more than a bounded window, and what it is handed in total grows
with the text; asserted as ratios of two sizes in one run (characters given to tiktoken, and CPU),
never as an absolute time.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import indexer.chunking as chunking
from artifacts.config import ChunkConfig
from artifacts.records import Document
from indexer.chunking import _MAX_TOKEN_BYTES, chunk_document, count_tokens, get_encoding
from indexer.markdown import parse_markdown


def _doc(body: str) -> Document:
    return parse_markdown("worst.md", body.encode(), blob_id="0" * 40, max_bytes=len(body.encode()) + 4096)


def _cpu(body: str, rounds: int) -> tuple[float, int]:
    best, chunks = float("inf"), 0
    for _ in range(rounds):
        started = time.process_time()
        chunks = len(chunk_document(_doc(body), ChunkConfig()))
        best = min(best, time.process_time() - started)
    return best, chunks


class _CountingEncoding:
    """tiktoken's encoding, recording the length of every text it is asked to encode."""

    def __init__(self) -> None:
        self.inner = get_encoding()
        self.lengths: list[int] = []

    def encode_ordinary(self, text: str) -> list[int]:
        self.lengths.append(len(text))
        return self.inner.encode_ordinary(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _encoded(monkeypatch: pytest.MonkeyPatch, body: str) -> tuple[int, int]:
    """(longest text given to tiktoken at once, total characters given to it) to chunk ``body``."""
    counting = _CountingEncoding()
    with monkeypatch.context() as patch:
        patch.setattr(chunking, "get_encoding", lambda: counting)
        chunk_document(_doc(body), ChunkConfig())
    return max(counting.lengths), sum(counting.lengths)


@pytest.mark.parametrize("unit", ["`", "ab1", "[", "é"])
def test_tiktoken_is_never_given_a_whole_long_line(monkeypatch: pytest.MonkeyPatch, unit: str) -> None:
    small, large = 128 * 1024, 1024 * 1024
    small_max, small_total = _encoded(monkeypatch, (unit * small)[:small])
    large_max, large_total = _encoded(monkeypatch, (unit * large)[:large])
    # before: the longest call was the whole line (8x), and the total about 5 whole lines
    assert large_max <= max(small_max, 4 * chunking._WINDOW_CHARS) < large, (unit, small_max, large_max)
    assert large_total <= 9 * small_total, (unit, small_total, large_total)


@pytest.mark.parametrize("unit", ["`", "ab1"])
def test_chunking_a_long_line_costs_cpu_linear_in_its_length(unit: str) -> None:
    small, large = 128 * 1024, 1024 * 1024
    small_s, small_chunks = _cpu((unit * small)[:small], rounds=3)
    large_s, large_chunks = _cpu((unit * large)[:large], rounds=1)
    assert large_chunks >= 7 * small_chunks
    # linear: 8 (measured 8-10 on a loaded machine); a quadratic cost would be 64
    assert large_s < 16 * max(small_s, 0.01), (unit, small_s, large_s)


def test_every_chunk_of_a_long_line_is_exact_and_within_the_maximum() -> None:
    body = ("ab1" * 70_000) + "\n\n" + " ".join(["word"] * 30_000)
    chunks = chunk_document(_doc(body), ChunkConfig())
    assert "".join(c.text for c in chunks if c.text.startswith("ab1")).replace("\n", "").startswith("ab1" * 1000)
    assert all(0 < c.tokens <= 450 and c.tokens == count_tokens(c.text) for c in chunks)


def test_no_cl100k_token_is_longer_than_the_bound_the_chunker_assumes() -> None:
    """A text of n characters has at least n / _MAX_TOKEN_BYTES tokens only if no token is longer."""
    encoding = get_encoding()
    longest = 0
    for token in range(encoding.n_vocab):
        try:
            longest = max(longest, len(encoding.decode_single_token_bytes(token)))
        except KeyError:  # ids between the ordinary and the special tokens
            continue
    assert longest <= _MAX_TOKEN_BYTES

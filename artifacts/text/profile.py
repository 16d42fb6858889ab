"""Language profiles: the closed word classes the answer and graph code need, one YAML file per language.

A profile (``artifacts/text/profiles/<code>.yaml``) holds, for one language:

- ``code`` (ISO 639-1), ``name``; ``pysbd``, ``simplemma``, ``num2words`` and ``stopwords`` (stopwords-iso):
  the language code those libraries use for this language (``null`` when they have none);
- ``alphabet``: every lower-case letter outside ASCII the language writes (``""`` for English): text whose
  language cannot be told is segmented by the rules of the profile whose alphabet holds most of its letters
  (:func:`alphabet_language`);
- ``letters``: letters that are typical of the language and rare in the others (detection only);
- ``function_words``: the most frequent function words (articles, prepositions, pronouns, auxiliaries)
  of the language, used by :func:`detect_language` only;
- ``classes``: named closed word classes (``negation``, ``copula``, ``conjunction_and``, ...), each a list
  of words or multi-word phrases; :meth:`Profile.words` returns one class folded;
- ``question_words``: interrogatives and question phrases mapped to the answer type they ask for
  (``count``, ``quantity``, ``time``, ``person``, ``place``, ``reason``, ``procedure``, ``definition``,
  ``choice``, ``yes_no``);
- ``number_words``: cardinal numbers spelled as words, ``word: value``;
- ``months`` and ``weekdays``: names (stems allowed, ending in ``*``);
- ``frames``: named question frames, each a list of patterns with one ``{x}`` slot (the subject):
  words separated by spaces, ``(a|b)`` one of the alternatives, ``[a|b]`` optionally one of them (``_``
  joins the words of one alternative: ``(mean|stand_for)``),
  ``{x}`` one or more words (:func:`frame_patterns`; matched case-insensitively on the text in NFC,
  not folded: ``"[a] co [to] (je|jsou) {x}"``);
- ``cognates``: regular letter correspondences with a ``close`` language, ``folded letters: folded letters``
  (Slovak ``ie`` = Czech ``í``: ``{ie: i}``), merged by :func:`artifacts.text.words.cognate_key`;
- ``close``: codes of languages so close that a short text often cannot be told from this one (Slovak
  and Czech): a detection tie among them returns the first code (alphabetically) of the tie.

Which profiles are read: a question's words from the profiles of the question's detected language,
an evidence text's words from those of the text's language (:func:`language_group`: the detected
language and its ``close`` languages, since a short Slovak or Czech text is often detected as the other
one; every profile when the language cannot be told).

Adding a language is adding a file; code reads the classes by name and never names a word.  Every
list is folded with :func:`artifacts.analysis.fold` when read (lower case, no diacritics), so entries
may be written with their diacritics.

Errors: :class:`ProfileError` (a :class:`ValueError`) for a missing or malformed profile file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import yaml

from artifacts.analysis import fold

ANSWER_TYPES = ("count", "quantity", "time", "person", "place", "reason", "procedure", "definition",
                "choice", "yes_no")
"""The answer types a question word can ask for (values of a profile's ``question_words``)."""


class ProfileError(ValueError):
    """A language profile file is missing or malformed."""


def _fold_one(word: Any) -> str:
    text = str(word).strip()
    star = "*" if text.endswith("*") else ""
    return " ".join(fold(text.rstrip("*")).split()) + star


def _fold_all(words: Iterable[Any]) -> frozenset[str]:
    if isinstance(words, (str, bytes)) or not isinstance(words, Iterable):
        raise ProfileError("a word class must be a list")
    for w in words:
        if not isinstance(w, (str, int)) or isinstance(w, bool):
            raise ProfileError(f"a word class holds {w!r}: quote words YAML reads as true/false/null")
    return frozenset(f for f in (_fold_one(w) for w in words) if f.strip("*"))


@dataclass(frozen=True)
class Profile:
    """One language's closed word classes, folded (see the module docstring for the file format)."""

    code: str
    name: str
    pysbd: str | None
    simplemma: str | None
    letters: frozenset[str]
    function_words: frozenset[str]
    classes: Mapping[str, frozenset[str]]
    question_words: Mapping[str, str]
    number_words: Mapping[str, int]
    months: frozenset[str]
    weekdays: frozenset[str]
    close: frozenset[str] = frozenset()
    num2words: str | None = None
    stopwords: str | None = None
    frames: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cognates: Mapping[str, str] = field(default_factory=dict)
    alphabet: frozenset[str] = frozenset()
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def words(self, name: str) -> frozenset[str]:
        """Return the folded words of class ``name``; an empty set when this profile has no such class."""
        return self.classes.get(name, frozenset())

    def matches(self, name: str, token: str) -> bool:
        """True when the folded ``token`` is a word of class ``name`` (an entry ending in ``*`` is a prefix)."""
        for entry in self.words(name):
            if entry.endswith("*") and " " not in entry:
                if token.startswith(entry[:-1]):
                    return True
            elif token == entry:
                return True
        return False

    def raw_words(self, name: str) -> tuple[str, ...]:
        """Return the entries of class ``name`` as written (lower case, not folded): for classes compared with
        text that keeps its diacritics (``infinitive_ending``: "vedoucí" ends in no infinitive, "péci" does)."""
        classes = self.raw.get("classes") or {}
        return tuple(str(w).lower() for w in classes.get(name) or ())

    def has_class(self, name: str) -> bool:
        """True when the profile defines the class ``name`` (even as an empty list)."""
        return name in self.classes


def _profile_from(data: Mapping[str, Any], source: str) -> Profile:
    if not isinstance(data, Mapping) or not isinstance(data.get("code"), str):
        raise ProfileError(f"language profile {source}: not a mapping with a 'code'")
    classes_raw = data.get("classes") or {}
    if not isinstance(classes_raw, Mapping):
        raise ProfileError(f"language profile {source}: 'classes' must be a mapping of lists")
    classes = {str(k): _fold_all(v or ()) for k, v in classes_raw.items()}
    questions_raw = data.get("question_words") or {}
    questions: dict[str, str] = {}
    for phrase, kind in questions_raw.items():
        if kind not in ANSWER_TYPES:
            raise ProfileError(f"language profile {source}: question word {phrase!r} asks for unknown type {kind!r}")
        questions[" ".join(fold(str(phrase)).split())] = str(kind)
    for key in questions_raw:
        if not isinstance(key, str):
            raise ProfileError(f"language profile {source}: question word {key!r} must be a quoted string")
    numbers = {" ".join(fold(str(w)).split()): int(v) for w, v in (data.get("number_words") or {}).items()}
    frames_raw = data.get("frames") or {}
    if not isinstance(frames_raw, Mapping) or not all(
            isinstance(v, list) and all(isinstance(f, str) and f.count("{x}") == 1 for f in v)
            for v in frames_raw.values()):
        raise ProfileError(f"language profile {source}: 'frames' must map names to lists of patterns with one {{x}}")
    return Profile(
        code=data["code"],
        name=str(data.get("name", data["code"])),
        pysbd=data.get("pysbd"),
        simplemma=data.get("simplemma"),
        letters=frozenset(str(data.get("letters") or "")),
        function_words=_fold_all(data.get("function_words") or ()),
        classes=classes,
        question_words=questions,
        number_words=numbers,
        months=_fold_all(data.get("months") or ()),
        weekdays=_fold_all(data.get("weekdays") or ()),
        close=frozenset(str(c) for c in data.get("close") or ()),
        num2words=data.get("num2words"),
        stopwords=data.get("stopwords"),
        frames={str(k): tuple(v) for k, v in frames_raw.items()},
        cognates={fold(str(k)): fold(str(v)) for k, v in (data.get("cognates") or {}).items()},
        alphabet=frozenset(str(data.get("alphabet") or "")),
        raw=dict(data),
    )


@lru_cache(maxsize=1)
def available() -> tuple[str, ...]:
    """Return the codes of the installed profiles, sorted (``("cs", "de", "en", "sk")``)."""
    folder = resources.files("artifacts.text") / "profiles"
    return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml")))


@cache
def load_profile(code: str) -> Profile:
    """Return the profile of language ``code``.

    Raises:
        ProfileError: no profile file for ``code``, or the file is malformed.
    """
    if code not in available():
        raise ProfileError(f"no language profile {code!r} (have: {', '.join(available())})")
    path = resources.files("artifacts.text") / "profiles" / f"{code}.yaml"
    try:
        # libyaml's safe loader when PyYAML has it: the same data, about 0.09 s less for the five profiles
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise ProfileError(f"language profile {code}: invalid YAML ({exc.__class__.__name__})") from None
    return _profile_from(data, code)


def profiles() -> dict[str, Profile]:
    """Return every installed profile by code."""
    return {code: load_profile(code) for code in available()}


def union(name: str, codes: Iterable[str] | None = None) -> frozenset[str]:
    """Return the folded words of class ``name`` over the profiles ``codes`` (all profiles when None)."""
    out: set[str] = set()
    for code in codes if codes is not None else available():
        out |= load_profile(code).words(name)
    return frozenset(out)


def language_group(code: str | None) -> tuple[str, ...]:
    """Return the profile codes to read for a text of language ``code``: ``code`` and its ``close`` languages
    (``("cs", "sk")`` for ``sk``), sorted; every installed profile when ``code`` is None or not installed."""
    if code is None or code not in available():
        return available()
    return tuple(sorted({code} | {c for c in load_profile(code).close if c in available()}))


@lru_cache(maxsize=8192)
def text_languages(text: str) -> tuple[str, ...]:
    """Return :func:`language_group` of the language :func:`detect_language` finds in ``text`` (cached)."""
    return language_group(detect_language(text))


_QUOTED = re.compile(r"\"[^\"]*\"|„[^“”]*[“”]|“[^”]*”|«[^»]*»|‚[^‘’]*[‘’]")


@lru_cache(maxsize=8192)
def question_languages(question: str) -> tuple[str, ...]:
    """Return :func:`language_group` of a question's language, told without its quoted spans: "Which posts link
    to "Dobrovolníci a datové sady"?" is asked in English (a quoted title is a name, not the question's words)."""
    return text_languages(_QUOTED.sub(" ", question))


@dataclass(frozen=True)
class WordClass:
    """One word class over some profiles, for look-ups of folded words: ``exact`` words, ``prefixes`` (entries
    that end in ``*``, matching every alphabetic word they begin) and ``phrases`` (entries of several words)."""

    exact: frozenset[str]
    prefixes: tuple[str, ...]
    phrases: tuple[str, ...]

    def has(self, folded: str) -> bool:
        """True when the folded word ``folded`` is an exact entry or an alphabetic word a prefix entry begins."""
        return folded in self.exact or (folded.isalpha() and folded.startswith(self.prefixes))

    def starts(self, folded: str) -> bool:
        """True when a prefix entry, or an exact entry taken as a prefix, begins ``folded`` (stems such as ``jun``)."""
        return folded.startswith(self.prefixes) or folded.startswith(tuple(self.exact))

    def in_text(self, tokens: Iterable[str]) -> bool:
        """True when a word of the class is one of the folded ``tokens`` or a phrase of it occurs in them."""
        words = list(tokens)
        if any(self.has(t) for t in words):
            return True
        flat = " " + " ".join(words) + " "
        return any(f" {p} " in flat for p in self.phrases)


@lru_cache(maxsize=1024)
def word_class(name: str, codes: tuple[str, ...] | None = None) -> WordClass:
    """Return the class ``name`` over the profiles ``codes`` (every profile when None) as a :class:`WordClass`."""
    entries = union(name, codes)
    return WordClass(frozenset(e for e in entries if not e.endswith("*")),
                     tuple(sorted(e[:-1] for e in entries if e.endswith("*") and " " not in e)),
                     tuple(sorted(e for e in entries if " " in e and not e.endswith("*"))))


@lru_cache(maxsize=64)
def date_words(codes: tuple[str, ...] | None = None) -> WordClass:
    """Return the ``months`` and ``weekdays`` of the profiles ``codes`` (every profile when None) as one
    :class:`WordClass` (stems ending in ``*`` are prefixes)."""
    entries: set[str] = set()
    for code in codes if codes is not None else available():
        entries |= load_profile(code).months | load_profile(code).weekdays
    return WordClass(frozenset(e for e in entries if not e.endswith("*")),
                     tuple(sorted(e[:-1] for e in entries if e.endswith("*"))), ())


def alphabet_language(text: str) -> str:
    """Return the code of the profile whose ``alphabet`` holds the most letters of ``text`` (the first code of a
    tie); when none holds any, the first profile with an empty alphabet (else the first profile)."""
    letters = [ch for ch in text.lower() if ch.isalpha() and not ch.isascii()]
    best, best_code = 0, None
    for code in available():
        alphabet = load_profile(code).alphabet
        count = sum(1 for ch in letters if ch in alphabet)
        if count > best:
            best, best_code = count, code
    if best_code is not None:
        return best_code
    return next((code for code in available() if not load_profile(code).alphabet), available()[0])


@lru_cache(maxsize=64)
def possessive(codes: tuple[str, ...] | None = None) -> re.Pattern[str] | None:
    """A pattern of the ``possessive_ending`` entries (as written) of the profiles ``codes`` (every profile when
    None) at the end of a word ("Bača's"), or None when they have none."""
    endings = {w for code in (codes if codes is not None else available())
               for w in load_profile(code).raw_words("possessive_ending")}
    if not endings:
        return None
    return re.compile(r"(?<=\w)(?:" + "|".join(re.escape(e) for e in sorted(endings, key=len, reverse=True)) + r")\b")


def class_names(prefix: str, codes: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """Return the names of the classes beginning with ``prefix`` in the profiles ``codes`` (every profile when
    None), in the order the files list them (``("action_found", "action_lead", "action_create")``)."""
    names: dict[str, None] = {}
    for code in codes if codes is not None else available():
        names.update(dict.fromkeys(n for n in load_profile(code).classes if n.startswith(prefix)))
    return tuple(names)


@lru_cache(maxsize=256)
def frame_patterns(name: str, codes: tuple[str, ...] | None = None) -> tuple[re.Pattern[str], ...]:
    """Return the compiled frames ``name`` of the profiles ``codes`` (every profile when None), in file order.

    Each pattern (format in the module docstring) becomes a regular expression with the group ``x`` for the
    slot, anchored by :meth:`re.Pattern.fullmatch`, case-insensitive; words are separated by any white space.
    """
    out: list[re.Pattern[str]] = []
    for code in codes if codes is not None else available():
        for frame in load_profile(code).frames.get(name, ()):
            out.append(re.compile(_frame_regex(frame), re.IGNORECASE))
    return tuple(out)


def _frame_regex(frame: str) -> str:
    tokens = frame.split()
    pieces: list[str] = []
    for i, token in enumerate(tokens):
        last = i == len(tokens) - 1
        if token == "{x}":
            pieces.append("(?P<x>.+)" if last else r"(?P<x>.+?)\s+")
            continue
        optional = token.startswith("[") and token.endswith("]")
        inner = token[1:-1] if optional or (token.startswith("(") and token.endswith(")")) else token
        alternatives = "|".join(r"\s+".join(re.escape(w) for w in alt.split("_")) for alt in inner.split("|"))
        pieces.append(f"(?:(?:{alternatives})\\s+)?" if optional else f"(?:{alternatives})" + ("" if last else r"\s+"))
    return "".join(pieces)


@lru_cache(maxsize=16)
def _function_word_share(codes: tuple[str, ...]) -> dict[str, int]:
    """How many of the profiles ``codes`` list each function word (a shared word is weaker evidence)."""
    count: dict[str, int] = {}
    for code in codes:
        for word in load_profile(code).function_words:
            count[word] = count.get(word, 0) + 1
    return count


def same_language(a: str | None, b: str | None) -> bool:
    """True when codes ``a`` and ``b`` are one language or ``close`` languages (Slovak and Czech); False
    when either is None."""
    if a is None or b is None:
        return False
    return a == b or (a in available() and b in load_profile(a).close)


def crosses_language(question_language: str | None, text_languages: Iterable[str | None]) -> bool:
    """True when the question's language is known and none of the known languages of the texts (each text
    detected on its own) is the same or a close one: the question is asked in another language."""
    known = [code for code in text_languages if code is not None]
    return question_language is not None and bool(known) and not any(
        same_language(question_language, code) for code in known)


def question_type(tokens: list[str], language: str | None = None) -> tuple[str | None, str | None]:
    """Return ``(answer type, phrase)`` of the first question phrase in folded ``tokens``, else ``(None, None)``.

    Tokens are scanned from the start; at each position the longest ``question_words`` phrase of the
    profile of ``language`` (every profile when None, or when that profile has none in the tokens) wins;
    a ``yes_no`` phrase counts only as the first word.  The interrogative that opens a question decides
    ("Which date format ...?" asks for a choice, "What happens when ...?" for nothing in particular).
    """
    codes = [language] if language is not None and language in available() else list(available())
    found = _first_phrase(tokens, tuple(codes))
    if found == (None, None) and len(codes) == 1:
        found = _first_phrase(tokens, available())
    return found


@lru_cache(maxsize=16)
def _phrase_table(codes: tuple[str, ...]) -> tuple[dict[tuple[str, ...], str], int]:
    table: dict[tuple[str, ...], str] = {}
    for code in codes:
        for phrase, kind in load_profile(code).question_words.items():
            table.setdefault(tuple(phrase.split()), kind)
    return table, max((len(k) for k in table), default=0)


def _first_phrase(tokens: list[str], codes: tuple[str, ...]) -> tuple[str | None, str | None]:
    table, longest = _phrase_table(codes)
    for i in range(len(tokens)):
        for n in range(min(longest, len(tokens) - i), 0, -1):
            kind = table.get(tuple(tokens[i:i + n]))
            if kind is None or (kind == "yes_no" and i > 0):
                continue
            return kind, " ".join(tokens[i:i + n])
    return None, None


def detect_language(text: str, candidates: Iterable[str] | None = None) -> str | None:
    """Return the code of the profile whose language ``text`` is most likely written in, or None.

    One detector for questions and evidence alike: each candidate profile scores ``1/k`` per token
    that is one of its ``function_words`` (``k``: how many candidate profiles list that word, so a word
    only one language uses counts most) and ``2/k`` per occurrence of one of its ``letters``
    (diacritics read before folding, in words that begin lower-case); the highest score wins when it is
    strictly above every other, or when the tied profiles are ``close`` to each other.  ``None`` when no
    profile scores or the best tie otherwise (too short or mixed to tell).

    Args:
        text: any text (a question, a chunk); only the first 4,000 characters are read.
        candidates: profile codes to choose from (default: every installed profile).
    """
    sample = text[:4000]
    from artifacts.analysis import folded_spans

    tokens = [t for t, _s, _e in folded_spans(sample)]
    # letters vote only in lower-case words: a name ("Holpův", "Müller") says little about the text
    lowered = " ".join(w for w in sample.split() if w[:1].islower())
    codes = list(candidates if candidates is not None else available())
    share = _function_word_share(tuple(codes))
    letter_share: dict[str, int] = {}
    for code in codes:
        for ch in load_profile(code).letters:
            letter_share[ch] = letter_share.get(ch, 0) + 1
    scores: list[tuple[float, str]] = []
    for code in codes:
        prof = load_profile(code)
        score = sum(1.0 / share[t] for t in tokens if t in prof.function_words)
        if prof.letters:
            score += sum(2.0 / letter_share[ch] for ch in lowered if ch in prof.letters)
        scores.append((score, code))
    scores.sort(key=lambda sc: (-sc[0], sc[1]))
    if not scores or scores[0][0] <= 0:
        return None
    tied = [code for score, code in scores if score == scores[0][0]]
    if len(tied) > 1:
        # a tie inside one group of close languages (Slovak and Czech) still tells the group: the
        # first code of the group stands for it; any other tie is too short or mixed to tell
        first = load_profile(tied[0])
        if not all(code in first.close for code in tied[1:]):
            return None
    return tied[0]

"""No natural-language word in Python code: the words live in the language profiles (issue 22, item 3).

Walks the Python modules of ``artifacts/``, ``indexer/`` and ``query/`` and fails on word material outside
docstrings and comments (a comment is no token; a docstring is the first string of a module, class or
function, or a bare string statement after an assignment):

- **letters**: a string constant holding a letter outside ASCII (``"ktorý"``, ``"[a-záäč]"``, a letter set);
- **word lists**: a tuple, list or set literal of three or more strings that are all words (letters only,
  or words joined by single spaces), and ``"a and und".split()`` of three or more words, when one of its
  words is a language word (below);
- **alternations**: a regular expression alternation of words (``(?:tel|phone|kontakt)``, ``je|jsou``):
  two or more words of two or more letters joined by ``|``, not after a backslash, when one of them is a
  language word.

A **language word** is one the language data knows, folded: an entry of any profile (function words,
every class, question words, number words, months, weekdays; a prefix entry of four or more letters
matches the words it begins), and that is no identifier.  (The stopwords-iso lists are not used: they hold
code words such as "html" and "test".)
A list of words the profiles do not know (``("md", "html", "htm")``, ``("Cf", "Cc", "Cs")``) is not
word knowledge the profiles lack; a list with one profile word in it is.

What is not language knowledge, by rule and not by a list of words:

- **identifiers**: a word the code itself uses as a name is an identifier of the code, not a word of a
  language: every Python name in the walked modules (variables, attributes, functions, classes,
  parameters, keyword arguments, imported modules) and every string the code uses as a key or a value
  it compares (a dict literal's key, a subscript, a keyword argument's value, a parameter default, a
  ``==``/``!=`` operand, a ``Literal[...]`` member), and every key of the packages' YAML data files whose
  value is a list or a mapping (a class or concept the data names: ``who`` of ``graphwords.yaml``; not the
  words of ``question_words`` or ``number_words``, whose values are scalars).  So a word list or
  alternation of identifiers (``("queued", "running", "failed")``, ``(?:json|JSON)``, field names, reason
  codes, format names) passes; one language word that is no identifier makes it language material;
- **sentences**: a string with letters outside ASCII that is a sentence (four or more words and a final
  ``.``, ``!``, ``?`` or ``:``) is text shown to people (a message, a probe text), not a word table;
- **Unicode categories**: the names of Unicode general categories (``"Cf"``, ``"Zl"``) are codes;
- **one character**: a single code point the code treats specially (Unicode casing: ``"İ"``, ``"Σ"``).

:data:`SKIPPED` lists the files this test does not read yet, each with its reason; shrink it, never grow it
for new code.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("artifacts", "indexer", "query")

SKIPPED = {
    # query/graph/ is the graph helper's (graph25); names.py's tables (name inflection endings, vowels with
    # their diacritics) move to the profiles after graph25's round lands.
    "query/graph/names.py": "graph25: name inflection endings and vowel letters",
}
"""Files not read yet (path relative to the repository root -> why); to shrink."""

_WORD = re.compile(r"[^\W\d_]+(?: [^\W\d_]+)*")
_ALTERNATION = re.compile(r"(?<![\\\w])([^\W\d_]{2,})(?:\\b)?\)?\|\(?(?:\\b)?(?=([^\W\d_]{2,})(?![\w]))")
_SENTENCE = re.compile(r"\S+(?:\s+\S+){3,}[.!?:]\s*$", re.S)


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (first statement of a body, or a bare string statement)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if not isinstance(body, list):
                continue
            for statement in body:
                if (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                        and isinstance(statement.value.value, str)):
                    out.add(id(statement.value))
    return out


def _identifiers(trees: list[ast.AST]) -> set[str]:
    """Every name the code uses and every string it uses as a key or a compared value, lower case."""
    names: set[str] = set()

    def add_string(node: ast.AST | None) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value.lower())

    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                names.add(node.id.lower())
            elif isinstance(node, ast.Attribute):
                names.add(node.attr.lower())
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name.lower())
            elif isinstance(node, ast.arg):
                names.add(node.arg.lower())
            elif isinstance(node, ast.keyword):
                if node.arg:
                    names.add(node.arg.lower())
                add_string(node.value)
            elif isinstance(node, ast.alias):
                names.update(part.lower() for part in (node.asname or node.name).split("."))
                names.update(part.lower() for part in node.name.split("."))
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and isinstance(node, ast.ImportFrom) and node.module:
                names.update(part.lower() for part in node.module.split("."))
            elif isinstance(node, ast.Dict):
                for key in node.keys:
                    add_string(key)
            elif isinstance(node, ast.Subscript):
                add_string(node.slice)
                if isinstance(node.value, ast.Name) and node.value.id == "Literal" or (
                        isinstance(node.value, ast.Attribute) and node.value.attr == "Literal"):
                    elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                    for element in elements:
                        add_string(element)
            elif isinstance(node, ast.Compare):
                if all(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops):
                    for operand in (node.left, *node.comparators):
                        add_string(operand)
            elif isinstance(node, ast.arguments):
                for default in (*node.defaults, *node.kw_defaults):
                    add_string(default)
    return names


def _data_keys() -> set[str]:
    """Keys of the packages' YAML files whose value is a list or a mapping, lower case."""
    import yaml

    keys: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, (dict, list)):
                    keys.add(str(key).lower())
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.yaml"):
            walk(yaml.safe_load(path.read_text(encoding="utf-8")))
    return keys


def _words_of(node: ast.AST) -> list[str] | None:
    """The strings of a word-list literal (tuple, list, set, or ``frozenset``/``set``/``tuple`` of one), else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split" \
            and not node.args and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        words = node.func.value.value.split()
        return words if len(words) >= 3 and all(_WORD.fullmatch(w) for w in words) else None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        strings = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if len(strings) >= 3 and len(strings) == len(node.elts) and all(_WORD.fullmatch(s) for s in strings):
            return strings
    return None


def _language_words() -> tuple[frozenset[str], tuple[str, ...]]:
    """Folded words and prefixes (four or more letters) of every profile."""
    from artifacts.text.profile import available, load_profile

    entries: set[str] = set()
    for code in available():
        prof = load_profile(code)
        entries |= set(prof.function_words) | set(prof.question_words) | set(prof.number_words)
        entries |= set(prof.months) | set(prof.weekdays)
        for words in prof.classes.values():
            entries |= set(words)
    exact = frozenset(w for e in entries if not e.endswith("*") for w in e.split())
    prefixes = tuple(sorted(e[:-1] for e in entries if e.endswith("*") and len(e) > 4 and " " not in e))
    return exact, prefixes


@lru_cache(maxsize=1)
def _categories() -> frozenset[str]:
    """Names of the Unicode general categories (``Cc``, ``Cf``, ``Lu``, ...; ``Cn`` for unassigned code points)."""
    return frozenset(unicodedata.category(chr(i)) for i in range(0x110000)) | {"Cn"}


def _findings(path: Path, tree: ast.AST, identifiers: set[str],
              language: tuple[frozenset[str], tuple[str, ...]] | None = None) -> Iterator[str]:
    from artifacts.text.words import fold_word

    docs = _docstrings(tree)
    where = _relative(path)
    exact, prefixes = language if language is not None else _language_words()

    def known(words: list[str]) -> bool:
        """True when no word is a language word that is no identifier."""
        for part in (p for word in words for p in word.split()):
            folded = fold_word(part)
            if part in _categories():
                continue
            if part.lower() not in identifiers and (folded in exact or folded.startswith(prefixes)):
                return False
        return True

    for node in ast.walk(tree):
        words = _words_of(node)
        if words is not None and not known(words):
            yield f"{where}:{node.lineno}: word list {words[:6]}"
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docs:
            continue
        text = node.value
        if any(ch.isalpha() and not ch.isascii() for ch in text) and len(text) > 1 and not _SENTENCE.match(text):
            yield f"{where}:{node.lineno}: letters outside ASCII {text[:60]!r}"
        alternatives = [w for m in _ALTERNATION.finditer(text) for w in m.groups()]
        if alternatives and not known(alternatives):
            yield f"{where}:{node.lineno}: alternation of words {text[:60]!r}"


def test_no_natural_language_words_in_python_code() -> None:
    paths = [p for p in _modules() if _relative(p) not in SKIPPED]
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in paths}
    identifiers = _identifiers(list(trees.values())) | _data_keys()
    found = [f for p, tree in trees.items() for f in _findings(p, tree, identifiers)]
    assert not found, "natural-language words in Python code (move them to artifacts/text/profiles/):\n" + \
        "\n".join(found)


def test_the_skip_list_names_existing_files() -> None:
    assert all((ROOT / path).is_file() for path in SKIPPED), "a skipped file was moved or removed: drop it"


def test_the_rules_catch_word_material() -> None:
    source = '''
WORDS = ("kto", "kdo", "who")
SPLIT = "je su bol".split()
LETTERS = "[a-záäč]"
CUE = r"\\b(?:tel|phone|kontakt)"
def f():
    """Docstrings may quote words: "ktorý", ("a", "an", "the")."""
    return 1
'''
    tree = ast.parse(source)
    found = list(_findings(ROOT / "query" / "x.py", tree, _identifiers([tree])))
    assert len(found) == 4, found
    identifiers = {"queued", "running", "failed", "json"}
    clean = ast.parse('STATES = ("queued", "running", "failed")\nFENCE = r"```(?:json|JSON)?"\nMSG = "Zebraplanktón'
                      ' and TCP packets, 2024."\n')
    assert not list(_findings(ROOT / "query" / "y.py", clean, identifiers))

"""What was recognised in a question: :class:`Analysis`."""

from __future__ import annotations

from dataclasses import dataclass, field

from query.graph.index import Named
from query.graph.names import (
    NameMatch,
    Token,
)
from query.graph.values import Combination, Value
from query.graph.words import Vocabulary


@dataclass
class Analysis:
    """What was recognised in a question (see the module docstring for the order)."""

    tokens: list[Token]
    years: list[int]
    persons: list[NameMatch] = field(default_factory=list)
    document_authors: list[NameMatch] = field(default_factory=list)
    unmatched_names: list[list[Token]] = field(default_factory=list)
    work_types: list[str] = field(default_factory=list)
    pages: list[Named] = field(default_factory=list)
    page_span: tuple[int, int] | None = None
    ambiguous_pages: list[Named] = field(default_factory=list)  # several titles fit the question's words
    quoted: list[tuple[int, int]] = field(default_factory=list)  # token ranges of quoted parts („…“)
    tags: list[str] = field(default_factory=list)
    topics: list[Named] = field(default_factory=list)
    concepts: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    unexplained: list[str] = field(default_factory=list)
    language: str | None = None
    intent: str = "unsupported"
    work_years: list[int] = field(default_factory=list)  # years that restrict works (not a start year)
    category_types: list[str] = field(default_factory=list)  # work types read from category values ("dr2018")
    category_start: bool = False  # a start-year category value ("st2014") was named
    values: list[Value] = field(default_factory=list)  # every recognised value with its span
    combos: dict[str, Combination] = field(default_factory=dict)  # kinds named twice or more, with operators
    negated: list[int] = field(default_factory=list)  # positions of negation words (not "but not")
    operators: list[tuple[int, int, str]] = field(default_factory=list)  # and / or / but_not word spans
    stated_years: list[int] = field(default_factory=list)  # years a premise question states (not a filter)
    field_values: dict[str, list[str]] = field(default_factory=dict)  # relation -> values the question names

    def structure_question(self, vocab: Vocabulary) -> bool:
        """Whether the question asks for persons or documents selected by front matter or links
        (see the ``structure`` section of graphwords.yaml): only the graph answers it.

        The asking word must ask for them: a ``targets`` word itself ("Kto má tag X?") or followed
        by one, stop words skipped ("Ktorí študenti ...", "How many posts ..."); "S akými nástrojmi
        pracujú študenti v téme X?" asks for tools, "What does the category code X mean?" for a meaning.
        """
        rule = vocab.structure
        by_value = self.has(*rule.get("selectors", ())) or bool(self.tags or self.topics or self.category_types)
        by_name = bool(self.persons or self.document_authors) and self.has(*rule.get("selectors_with_name", ()))
        if not (by_value or by_name):
            return False
        targets = {p for c in rule.get("targets", ()) for s, e, _ in self.concepts.get(c, []) for p in range(s, e)}
        who = {p for s, e, _ in self.concepts.get("who", []) for p in range(s, e)}
        for concept in rule.get("asks", ()):
            for start, end, _ in self.concepts.get(concept, []):
                if start in targets:
                    # a bare "who" next to a name asks for a person of that name's page ("Kto je
                    # vedúci práce X?"), which the page's text says; with a value it selects ("Kto má tag X?")
                    if by_value or start not in who:
                        return True
                    continue
                after = end
                while after < len(self.tokens) and after not in targets and vocab.is_stopword(self.tokens[after]):
                    after += 1
                if after in targets and after not in who:
                    return True
        return False

    def has(self, *concepts: str) -> bool:
        return any(self.concepts.get(c) for c in concepts) or ("start" in concepts and self.category_start)

    @property
    def specific_type(self) -> bool:
        return len(self.work_types) == 1

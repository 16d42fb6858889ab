"""Graph retrieval: recognise entities and the intent of a question, run a parameterised Cypher
template, answer with facts, paths, documents and exact aggregations in the response contract.

Entry point: :func:`query.graph.dispatch.answer_graph` (``POST /graph`` and ``gitrag graph``).

A question is answered only when it was understood: an intent was recognised **and** every slot
that intent needs was filled from the question.  Understanding, in order:

1. entities: persons (inflected Slovak/Czech names, a possessive ``'s`` dropped, one typo in a
   full name), document authors (e.g. supervisors), years, then -- when the question speaks of
   links, authors or documents -- page titles, and -- when it speaks of tags or topics -- tag and
   topic values; surnames alone; capitalised words that name nobody known (``unknown_names``);
2. intent words, matched only on the words that are *not* part of an entity, from the mapping's
   vocabulary (:mod:`query.graph.words`; per language, lemmatised with simplemma);
3. every remaining word must be a stop word or a ``filler`` word: a question with a word the
   vocabulary does not explain ("e-mail", "známku", "let") is not understood.

Front matter category values written in the question ("dr2018", "st2016") are read with the
mapping's own patterns (a work type and a year, or a start year).  Every body reports
``entities.structure_question``: whether the question asks for persons or documents selected by front
matter or links (``structure`` in graphwords.yaml); ``/answer`` never passes such a question to text
search when the graph did not answer it.

Intents (``intent`` of the response) and their slots:

==========================  ======================================================================
``works_of_person``         one person; a work word or work type
``title_of_work``           one person; a title word (work type optional: then every work's title)
``year_of_work``            one person; a year word and one work type
``supervisor_of_work``      one person; a supervisor word (work type optional)
``start_year_of_person``    one person; a start word
``persons_with_work``       work word or type, and count/list words; year optional (exact count)
``persons_started``         a start word and a year (exact count; the start year, never a work year)
``tags_of_person``          one person; a tag word (``topics_of_person``: a topic word)
``common_tags``             two or more persons; a tag word (``common_topics``: a topic word)
``persons_with_tag``        a tag or topic value named after a tag/topic word; persons (``documents_with_tag``
                            when the question asks for documents)
``documents_of_author``     a person or document author; an author/document word (a tag value and a
                            year restrict the documents: "Kolik článků se štítkem X napsal Y v roce 2020?")
``author_of_document``      a page named by its title (words may be inflected; the beginning of one
                            title only is enough); an author word
``tags_of_document``        a page named by its title (two or more words); a tag word
                            (``topics_of_document``: a topic word)
``links_to`` / ``links_from``  a page (title, or a person's page); a link word and a direction
==========================  ======================================================================

Several values of one kind ("tag nlp aj sentiment", "v roku 2020 alebo 2021", "Eva Kolárová alebo
Peter Blahút", two persons) are read with their operators (:mod:`query.graph.values`) and answered as
set operations with an exact count, or per person for a fact question (:data:`_COMBINES`), or
refused; a negated question is refused.  A question that states a fact (``premise`` words: "Je
pravda, že ...?") about a work's year, a start year, a supervisor or tags gets the fact and
``answer.premise`` (``{stated, holds}``).  Every fact carries ``chunk_ids`` -- the chunks of its page
that state its values -- and ``front_matter``, the values only the front matter holds
(:func:`stating_chunks`).

Honest non-answers: a question about a person that names nobody known -> ``no_answer`` /
``unknown_person`` whatever its intent (a name that is only a document author, e.g. a supervisor,
is reported in ``entities.document_authors`` but never taken for a student); several persons fit
-> ``ambiguous`` / ``ambiguous_person`` with ``candidates``; a page title nobody has ->
``no_answer`` / ``unknown_page`` (also a question for the author of a page when no title fits its
words: "Kdo napsal příručku o rajčatech?"; several titles begin with its words -> ``ambiguous`` /
``ambiguous_page`` with ``candidates``); the asked work or value does not exist -> ``no_answer`` /
``no_matching_sources``; content questions and anything not understood -> ``no_answer`` /
``unsupported_question`` with ``suggested_endpoint: "/search"`` and the recognised ``entities``
(so a caller can restrict text search to the persons' documents).  Lists are fetched with
``limit + 1`` rows: when a list is cut, ``truncated`` is true, ``truncation_reasons`` names the
limit and ``complete`` is false, while ``aggregation.count`` (a separate ``count(DISTINCT ...)``)
stays exact.  With ``published_only`` (the default) pages marked ``published: false`` do not
exist for any part of the answer: not as persons, titles, tags, link ends or candidates.
"""

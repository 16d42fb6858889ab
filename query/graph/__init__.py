"""Graph retrieval: question analysis against the bundle's graph, intents, Cypher, graph answers."""

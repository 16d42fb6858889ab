"""Export a bundle's graph as GraphML or JSON for viewing in common tools (Gephi, yEd, Cytoscape).

Node ids are ``<Table>:<primary key>`` so that keys of different tables never collide; every
property is exported (JSON strings such as ``chunk_ids`` stay strings).  The output is
deterministic: nodes and edges are sorted.
"""

from __future__ import annotations

import json
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import ladybug

from artifacts.graphschema import NODE_TABLES, REL_TABLES, fetch_rows, stored_properties

FORMATS = ("graphml", "json")

_NODE_BY_NAME = {t.name: t for t in NODE_TABLES}
_GRAPHML_TYPES = {"STRING": "string", "INT64": "long", "BOOL": "boolean"}


def read_graph(conn: ladybug.Connection) -> dict[str, list[dict[str, Any]]]:
    """Return ``{"nodes": [{id, label, properties}], "edges": [{source, target, type, properties}]}``."""
    nodes: list[dict[str, Any]] = []
    for table in NODE_TABLES:
        stored = stored_properties(conn, table.name)  # an older schema's graph lacks newer properties
        names = [n for n, _ in table.properties if n in stored]
        returns = ", ".join(f"n.{n}" for n in names)
        for row in fetch_rows(conn, f"MATCH (n:{table.name}) RETURN {returns}"):
            props = dict(zip(names, row, strict=True))
            nodes.append({"id": f"{table.name}:{props[table.primary_key]}", "label": table.name, "properties": props})
    edges = []
    for rel in REL_TABLES:
        names = [n for n, _ in rel.properties]
        src_pk, dst_pk = _NODE_BY_NAME[rel.source].primary_key, _NODE_BY_NAME[rel.target].primary_key
        returns = ", ".join([f"a.{src_pk}", f"b.{dst_pk}"] + [f"r.{n}" for n in names])
        cypher = f"MATCH (a:{rel.source})-[r:{rel.name}]->(b:{rel.target}) RETURN {returns}"
        for row in fetch_rows(conn, cypher):
            edges.append({
                "source": f"{rel.source}:{row[0]}", "target": f"{rel.target}:{row[1]}", "type": rel.name,
                "properties": dict(zip(names, row[2:], strict=True)),
            })
    nodes.sort(key=lambda n: n["id"])
    edges.sort(key=lambda e: json.dumps(e, sort_keys=True, ensure_ascii=False))
    return {"nodes": nodes, "edges": edges}


def export_graph(conn: ladybug.Connection, fmt: str) -> str:
    """Return the whole graph as text in ``fmt`` (``graphml`` or ``json``).

    :raises ValueError: unknown format.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; formats: {', '.join(FORMATS)}")
    graph = read_graph(conn)
    if fmt == "json":
        return json.dumps(graph, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    return _graphml(graph)


def _graphml(graph: dict[str, list[dict[str, Any]]]) -> str:
    node_keys: dict[str, str] = {"label": "string"}
    edge_keys: dict[str, str] = {"type": "string"}
    for table in NODE_TABLES:
        for name, type_ in table.properties:
            node_keys.setdefault(name, _GRAPHML_TYPES[type_])
    for rel in REL_TABLES:
        for name, type_ in rel.properties:
            edge_keys.setdefault(name, _GRAPHML_TYPES[type_])
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">',
    ]
    for name, type_ in node_keys.items():
        lines.append(f'  <key id="n_{name}" for="node" attr.name="{name}" attr.type="{type_}"/>')
    for name, type_ in edge_keys.items():
        lines.append(f'  <key id="e_{name}" for="edge" attr.name="{name}" attr.type="{type_}"/>')
    lines.append('  <graph id="G" edgedefault="directed">')
    for node in graph["nodes"]:
        lines.append(f"    <node id={quoteattr(node['id'])}>")
        lines.append(f'      <data key="n_label">{escape(node["label"])}</data>')
        lines.extend(_data("n", node["properties"]))
        lines.append("    </node>")
    for i, edge in enumerate(graph["edges"]):
        lines.append(f"    <edge id=\"e{i}\" source={quoteattr(edge['source'])} target={quoteattr(edge['target'])}>")
        lines.append(f'      <data key="e_type">{escape(edge["type"])}</data>')
        lines.extend(_data("e", edge["properties"]))
        lines.append("    </edge>")
    lines += ["  </graph>", "</graphml>", ""]
    return "\n".join(lines)


def _data(prefix: str, props: dict[str, Any]) -> list[str]:
    out = []
    for name, value in props.items():
        if value is None:
            continue
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        text = "".join(c for c in text if c in "\t\n\r" or ord(c) >= 0x20)  # XML 1.0 forbids other controls
        out.append(f'      <data key="{prefix}_{name}">{escape(text)}</data>')
    return out

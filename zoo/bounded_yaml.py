"""``yaml.safe_load`` with a bound on what the document expands to, for files users hand the zoo.

YAML aliases (``&anchor`` / ``*ref``) let a few hundred bytes describe billions of values (the
"billion laughs" document): PyYAML builds them as shared objects, cheaply, and the blow-up comes
when the data is copied or walked. :func:`load` counts the nodes the document expands to before
building it, memoised per shared node, so the count itself stays linear in the file.
"""

from __future__ import annotations

from typing import Any

import yaml

#: Most nodes a document may expand to; the largest shipped recipe has a few hundred.
MAX_NODES = 100_000


class YAMLLimitError(ValueError):
    """The document expands past :data:`MAX_NODES`, or an alias contains itself."""


def load(text: str, max_nodes: int = MAX_NODES) -> Any:
    """The document in ``text`` as Python data, refused when it expands to more than ``max_nodes`` nodes."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, {}, set(), max_nodes)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded_size(node: yaml.Node, sizes: dict[int, int], open_nodes: set[int], max_nodes: int) -> int:
    """Nodes under ``node`` with every alias expanded (a node shared by aliases counts once per use)."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in open_nodes:
        raise YAMLLimitError("has an alias that contains itself; write a plain tree")
    open_nodes.add(key)
    if isinstance(node, yaml.MappingNode):
        children = [child for pair in node.value for child in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    else:
        children = []
    size = 1 + sum(_expanded_size(child, sizes, open_nodes, max_nodes) for child in children)
    open_nodes.discard(key)
    if size > max_nodes:
        raise YAMLLimitError(
            f"expands to more than {max_nodes} YAML nodes through its aliases (&anchor/*ref); write the values out"
        )
    sizes[key] = size
    return size

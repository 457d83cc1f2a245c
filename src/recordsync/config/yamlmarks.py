"""Load YAML and remember where every key is, so errors can name the file and line."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from recordsync.core.errors import ConfigError

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's safe loader, with libyaml's parser when PyYAML was built with it (the wheels
are): the same data, marks and errors, about ten times faster than the pure-Python parser."""


MAX_ALIAS_EXPANSION = 1_000_000
"""How much YAML aliases (``*name``) may add to a document, counted in characters of the
values they repeat (a value counts its length plus one, a list or mapping one): far above
what sharing a block of options needs, far below what an alias bomb ("billion laughs")
expands to."""


def load_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """Parse ``path`` and return ``(data, node tree)``; YAML syntax errors name the line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(
            "file not found",
            file=str(path),
            hint="check the path (relative paths are "
            "resolved from the directory of the file that names them)",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read file: {exc}", file=str(path)) from None
    return parse_yaml(text, str(path))


def parse_yaml(text: str, file: str) -> tuple[Any, yaml.Node | None]:
    """The one way recordsync reads YAML (configs, owners files, profiles, sandbox seeds):
    ``(data, node tree)`` of ``text`` (read from ``file``). A syntax error, a key given twice
    in one mapping, an alias that repeats its own anchor, or aliases that expand by more
    than :data:`MAX_ALIAS_EXPANSION` is a ConfigError naming the file and the line, raised
    before any alias is expanded."""
    try:
        loader = _Loader(text)
        try:  # one parse: the data is constructed from the node tree
            node = loader.get_single_node()
            if node is not None and "*" in text:  # no alias without a '*'
                _bound_aliases(node, file)
            _refuse_duplicate_keys(node, file)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(
            f"invalid YAML: {exc.problem}",
            file=file,
            line=line,
            hint="fix the YAML syntax (indentation, quotes, colons)",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", file=file) from None
    return data, node


def _children(node: yaml.Node) -> Iterator[tuple[yaml.Node, int]]:
    """A collection's keys, values and items, each with the line that shows where it is
    used (an alias keeps no line of its own: its key's, or its list's)."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            line = key.start_mark.line + 1
            yield key, line
            yield value, line
    else:
        line = node.start_mark.line + 1
        for item in node.value:
            yield item, line


def _bound_aliases(root: yaml.Node, file: str) -> None:
    """Refuse aliases that repeat too much (see :data:`MAX_ALIAS_EXPANSION`) or repeat a
    node inside itself, in document order, without expanding anything: each node's
    expanded size is worked out once, and an alias adds the size of the node it names."""
    if isinstance(root, yaml.ScalarNode):
        return
    size: dict[int, int] = {}  # id(node) -> expanded size, once the node is done
    added = 0
    # per open collection: node, its children, its size so far
    stack: list[tuple[yaml.Node, Iterator[tuple[yaml.Node, int]], list[int]]] = [
        (root, _children(root), [1])
    ]
    walking = {id(root)}  # the open collections: an alias to one of them is a cycle
    while stack:
        node, children, total = stack[-1]
        child, line = next(children, (None, 0))
        if child is None:  # the collection is done
            stack.pop()
            walking.discard(id(node))
            size[id(node)] = total[0]
            if stack:
                stack[-1][2][0] += total[0]
            continue
        key = id(child)
        known = size.get(key)
        if known is not None:  # an alias of a value already read
            added += known
            total[0] += known
            if added > MAX_ALIAS_EXPANSION:
                raise ConfigError(
                    f"YAML aliases (*name) here repeat more than {MAX_ALIAS_EXPANSION:,} "
                    "characters of values: refused as an alias bomb",
                    file=file,
                    line=line,
                    hint="write the values out, or share less through anchors and aliases",
                )
        elif isinstance(child, yaml.ScalarNode):
            size[key] = len(child.value) + 1
            total[0] += size[key]
        elif key in walking:
            raise ConfigError(
                "a YAML alias (*name) repeats the anchor it is inside of (an endless value)",
                file=file,
                line=line,
                hint="an alias can only name a value that ends before it",
            )
        else:
            walking.add(key)
            stack.append((child, _children(child), [1]))


def _refuse_duplicate_keys(root: yaml.Node | None, file: str) -> None:
    """A key given twice in one mapping is a ConfigError naming the file, the line of the
    second one and the key (YAML loaders keep the last one silently)."""
    stack = [root] if root is not None else []
    seen_nodes: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:  # anchors and aliases share nodes
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[str, int] = {}
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value != "<<":
                    line = key_node.start_mark.line + 1
                    if key_node.value in first:
                        raise ConfigError(
                            f"duplicate key {key_node.value!r} (first given on line "
                            f"{first[key_node.value]})",
                            file=file,
                            line=line,
                            key=key_node.value,
                            hint="keep one of the two: YAML would silently use the last",
                        )
                    first[key_node.value] = line
                stack.append(value_node)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


def line_of(node: yaml.Node | None, loc: Sequence[int | str]) -> int | None:
    """1-based line of the deepest node reachable along ``loc`` (keys and list indexes)."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == str(part):
                    line = key_node.start_mark.line + 1
                    node = value_node
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line

"""Load YAML and remember where every key is, so errors can name the file and line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from recordsync.errors import ConfigError

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""PyYAML's safe loader, with libyaml's parser when PyYAML was built with it (the wheels
are): the same data, marks and errors, about ten times faster than the pure-Python parser."""


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
    try:
        loader = _Loader(text)
        try:  # one parse: the data is constructed from the node tree
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        raise ConfigError(
            f"invalid YAML: {exc.problem}",
            file=str(path),
            line=line,
            hint="fix the YAML syntax (indentation, quotes, colons)",
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", file=str(path)) from None
    _refuse_duplicate_keys(node, path)
    return data, node


def _refuse_duplicate_keys(root: yaml.Node | None, path: Path) -> None:
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
                            file=str(path),
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

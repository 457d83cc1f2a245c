"""YAML an attacker (or an accident) can write: shared by the tests of every YAML the tool
reads (mappings, pipelines, owners files, profiles, sandbox seeds)."""

from __future__ import annotations


def alias_bomb(levels: int = 9, indent: str = "") -> str:
    """A "billion laughs": each level a list of nine aliases of the level before, so level
    ``n`` expands to 9**n strings; a YAML mapping of one key per level."""
    lines = [f'{indent}l0: &l0 ["{"lol" * 3}"' + ', "lol"' * 8 + "]"]
    for n in range(1, levels):
        lines.append(f"{indent}l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


BOMB = alias_bomb()

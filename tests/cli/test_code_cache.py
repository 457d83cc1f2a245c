"""recordsync.cli.code_cache: the texts ``dataclasses``, ``typing`` and ``collections`` compile
at run time, cached on disk for the next command-line process. What is made through the cache
must be what the built-ins make; the file is written only when it grew, never trusted when it
is corrupt, another interpreter's or writable by others.

Each case runs a fresh interpreter (the cache hooks modules process-wide); nothing here
measures time."""

from __future__ import annotations

import importlib.util
import marshal
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli.children import child_env, child_json

from recordsync.cli.code_cache import MAX_ENTRIES, WRITE_AFTER, CodeCache

# classes made in a module without `from __future__ import annotations` (as a library's are):
# their methods' annotations are the objects, not strings, with the cache as without it
MADE = r'''
import dataclasses, inspect, json, sys, typing
from collections import namedtuple
from dataclasses import dataclass, field

@dataclass(frozen=True, order=True)
class Point:
    x: int
    y: "list[str]" = field(default_factory=list)
    z: float = 1.5

@dataclass(kw_only=True, slots=True)
class Options:
    name: str
    size: typing.Optional[int] = None

Pair = namedtuple("Pair", "left right", defaults=[0])

class Hinted:
    a: "typing.Optional[int]"
    b: "dict[str, Point]"

import re
PATTERNS = [
    (r"(?P<year>\d{4})-(?P<month>\d\d)(?:-(?P<day>\d\d))?", 0),
    (r"^\s*(?i:https?)://[^/\s]+(?<!\.)$", 0),
    (r"[\u00c0-\u024f\w]+ # a word\n| \d+", re.VERBOSE | re.IGNORECASE),
    (rb"\x00(?P<tag>[a-z]+)\xff", re.DOTALL),
    (r"(a)(b)?(?(2)c|d)", re.MULTILINE),
    (r"(?s)a.b", 0),
]
compiled_here = [re.compile(p, f) for p, f in PATTERNS]

p = Point(1, ["a"])
try:
    p.x = 2
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
MADE = {
    "init": str(inspect.signature(Point.__init__)),
    "annotations": {k: repr(v) for k, v in Point.__init__.__annotations__.items()},
    "repr": repr(p),
    "eq": p == Point(1, ["a"]),
    "lt": Point(0) < p,
    "hash": hash(Point(1, ())) == hash(Point(1, ())),
    "frozen": frozen,
    "options": repr(Options(name="n")),
    "options_init": str(inspect.signature(Options.__init__)),
    "pair": [repr(Pair(1)), Pair(1, 2)._asdict(), str(inspect.signature(Pair))],
    "hints": {k: repr(v) for k, v in typing.get_type_hints(Hinted).items()},
    "patterns": [
        [repr(c), c.flags, c.groups, dict(c.groupindex)] for c in compiled_here
    ],
    "matches": [
        repr(compiled_here[0].match("2026-11-29").groupdict()),
        bool(compiled_here[1].match(" HTTPS://example.com")),
        compiled_here[2].findall("Émile 42 x"),
        repr(compiled_here[3].search(b"..\x00abc\xff").group("tag")),
        [m.group(0) for m in compiled_here[4].finditer("abc ad")],
        bool(compiled_here[5].match("a\nb")),
    ],
}
'''

SCRIPT = (
    """import json, sys
from recordsync.cli import startup
if sys.argv[1] == "cached":
    startup.leave_out_unused()
    import dataclasses
    hooked = "exec" in vars(dataclasses)
else:
    hooked = False
"""
    + MADE
    + """
cache = startup._CODE_CACHE[0] if startup._CODE_CACHE else None
from_file, compiled = (cache.loaded, cache.compiled) if cache else (0, 0)
startup.compiled_texts_done()
re.purge()
same = [c == re.compile(p, f) for c, (p, f) in zip(compiled_here, PATTERNS)]
MADE["same_as_re"] = same
import collections, dataclasses, typing
left = [n for m, n in ((dataclasses, "exec"), (typing, "compile"), (collections, "eval"))
        if n in vars(m)] + (["re"] if re._compiler.compile.__module__ != "re._compiler" else [])
json.dump({"made": MADE, "hooked": hooked, "compiled": compiled, "loaded": from_file,
           "left": left}, sys.stdout)
"""
)


def made(tmp_path: Path, mode: str, **env_extra: str) -> dict[str, Any]:
    env = child_env(**env_extra, XDG_CACHE_HOME=str(tmp_path / "cache"))
    if "PYTHONDONTWRITEBYTECODE" not in env_extra:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    got: dict[str, Any] = child_json(SCRIPT, mode, env=env, cwd=tmp_path)
    return got


def cache_path(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "recordsync" / f"compiled-{sys.implementation.cache_tag}.marshal"


def test_classes_made_through_the_cache_are_the_ones_the_builtins_make(tmp_path: Path) -> None:
    """First process: compiles and writes the file; second: compiles none of those texts;
    what both make is what a process without the cache makes; after the release the three
    modules use the built-ins again."""
    plain = made(tmp_path, "plain")
    assert plain["hooked"] is False and not cache_path(tmp_path).exists()
    first = made(tmp_path, "cached")
    assert first["hooked"] is True and first["loaded"] == 0 and first["compiled"] > 0
    assert cache_path(tmp_path).is_file()
    assert cache_path(tmp_path).stat().st_mode & 0o077 == 0
    second = made(tmp_path, "cached")
    assert second["loaded"] >= first["compiled"] and second["compiled"] == 0
    assert plain["made"] == first["made"] == second["made"]
    # the annotations are objects, as the built-in exec makes them (no compiler flags of
    # recordsync's modules leak in), not strings
    assert plain["made"]["annotations"] == {
        "x": "<class 'int'>",
        "y": "'list[str]'",
        "z": "<class 'float'>",
        "return": "None",
    }
    assert first["left"] == second["left"] == []
    # the patterns made from cached translations equal re's own, compiled after the release
    assert plain["made"]["same_as_re"] == second["made"]["same_as_re"] == [True] * 6


def test_a_corrupt_or_foreign_file_is_ignored_and_written_again(tmp_path: Path) -> None:
    path = cache_path(tmp_path)
    path.parent.mkdir(parents=True)
    for content in (
        b"",
        b"garbage",
        importlib.util.MAGIC_NUMBER + b"\x00\x01",
        b"\x00\x00\r\n" + marshal.dumps({}),  # another interpreter's
        importlib.util.MAGIC_NUMBER + marshal.dumps([1, 2]),
        importlib.util.MAGIC_NUMBER + marshal.dumps({("exec", "<string>", "x"): "not code"}),
    ):
        path.write_bytes(content)
        got = made(tmp_path, "cached")
        assert got["loaded"] == 0 and got["compiled"] > 0, content
        assert CodeCache(path).loaded == got["compiled"]


def test_a_file_others_may_write_is_not_read(tmp_path: Path) -> None:
    """The file holds code: group- or world-writable, it is ignored (and replaced)."""
    made(tmp_path, "cached")
    path = cache_path(tmp_path)
    path.chmod(0o622)
    got = made(tmp_path, "cached")
    assert got["loaded"] == 0 and got["compiled"] > 0
    assert path.stat().st_mode & 0o077 == 0
    assert made(tmp_path, "cached")["compiled"] == 0


def test_nothing_is_written_when_python_writes_no_bytecode(tmp_path: Path) -> None:
    got = made(tmp_path, "cached", PYTHONDONTWRITEBYTECODE="1")
    assert got["compiled"] > 0 and not cache_path(tmp_path).exists()


def test_the_cache_is_left_out_when_switched_off(tmp_path: Path) -> None:
    made(tmp_path, "cached")  # a file to read
    got = made(tmp_path, "cached", RECORDSYNC_CODE_CACHE="off")
    assert (got["hooked"], got["loaded"], got["compiled"]) == (False, 0, 0)


def test_the_file_is_cut_back_to_what_one_process_used_past_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "compiled.marshal"
    filler = compile("0", "<string>", "eval")
    many = {("eval", "<string>", f"{n}"): filler for n in range(MAX_ENTRIES)}
    content = {"texts": many, "regexes": {}, "sre": re._constants.MAGIC}
    path.write_bytes(importlib.util.MAGIC_NUMBER + marshal.dumps(content))
    cache = CodeCache(path)
    assert cache.loaded == MAX_ENTRIES
    cache.install()
    new = [f"a + {n}" for n in range(1, WRITE_AFTER + 1)]
    try:
        assert cache.code("1", "<string>", "eval") == filler and cache.compiled == 0  # found
        for text in new:  # compiled
            assert eval(cache.code(text, "<string>", "eval"), {"a": 1}) == 1 + int(text[4:])
    finally:
        cache.release()
    kept = CodeCache(path)
    assert kept.loaded == 1 + WRITE_AFTER
    assert set(kept.codes) == {("eval", "<string>", t) for t in ["1", *new]}


def test_a_few_misses_do_not_rewrite_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pattern built from a set is another text in every process: fewer than WRITE_AFTER
    misses leave the file as it is."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "compiled.marshal"
    cache = CodeCache(path)
    cache.install()
    try:
        for n in range(WRITE_AFTER):
            cache.code(f"b + {n}", "<string>", "eval")
    finally:
        cache.release()
    written = path.read_bytes()
    cache = CodeCache(path)
    cache.install()
    try:
        for n in range(WRITE_AFTER - 1):
            cache.code(f"c + {n}", "<string>", "eval")
        cache.code("b + 0", "<string>", "eval")
    finally:
        cache.release()
    assert path.read_bytes() == written


def test_a_translation_re_does_not_take_is_made_again(tmp_path: Path) -> None:
    """A cached translation that ``_sre.compile`` refuses (a damaged file of this user's):
    the pattern is translated again, as re does."""
    path = tmp_path / "compiled.marshal"
    broken = (0, ["not an opcode"], 0, {}, (None,))
    content = {"texts": {}, "regexes": {("a+b", 0): broken}, "sre": re._constants.MAGIC}
    path.write_bytes(importlib.util.MAGIC_NUMBER + marshal.dumps(content))
    cache = CodeCache(path)
    assert cache.regexes == {("a+b", 0): broken}
    pattern = cache.regex("a+b", 0)
    assert pattern == re.compile("a+b") and pattern.match("aab") and cache.compiled == 1


def test_another_engines_patterns_are_ignored_and_the_texts_kept(tmp_path: Path) -> None:
    made(tmp_path, "cached")
    path = cache_path(tmp_path)
    content = marshal.loads(path.read_bytes()[len(importlib.util.MAGIC_NUMBER) :])
    assert content["regexes"] and content["texts"]
    content["sre"] = 1
    path.write_bytes(importlib.util.MAGIC_NUMBER + marshal.dumps(content))
    cache = CodeCache(path)
    assert cache.regexes == {} and len(cache.codes) == len(content["texts"])
    got = made(tmp_path, "cached")
    assert got["compiled"] == len(content["regexes"])  # the patterns only, translated again
    assert got["made"]["same_as_re"] == [True] * 6


def test_compile_with_flags_or_other_sources_is_the_builtins(tmp_path: Path) -> None:
    """typing's ``compile`` through the cache: anything but a plain text with no flags goes
    to the built-in, uncached."""
    import ast

    cache = CodeCache(tmp_path / "none.marshal")
    tree = compile("x + 1", "<string>", "eval", ast.PyCF_ONLY_AST)
    assert isinstance(cache._compile("x + 1", "<string>", "eval", ast.PyCF_ONLY_AST), ast.AST)
    assert eval(cache._compile(tree, "<string>", "eval"), {"x": 1}) == 2
    assert cache.compiled == 0
    assert eval(cache._compile("x + 1", "<string>", "eval"), {"x": 2}) == 3
    assert cache.compiled == 1


def test_the_file_is_in_the_users_cache_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    from recordsync.cli.code_cache import cache_file

    name = f"compiled-{sys.implementation.cache_tag}.marshal"
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/cache/u")
    assert cache_file() == Path("/var/cache/u/recordsync") / name
    monkeypatch.setenv("HOME", "/home/u")
    for ignored in ("", "relative/cache"):
        monkeypatch.setenv("XDG_CACHE_HOME", ignored)
        assert cache_file() == Path("/home/u/.cache/recordsync") / name

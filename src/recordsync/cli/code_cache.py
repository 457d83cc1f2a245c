"""Source text and regular expressions that the standard library compiles at run time,
compiled once and cached on disk for the next ``recordsync`` process (a 1,000-row run's CPU,
measured at load 10-15 in alternating pairs: about 60 ms less for the texts, 15 ms for the
regular expressions; reading the file costs about 7 ms).

A run's imports make about 120 dataclasses (recordsync's own and its libraries'), and
``dataclasses`` writes each one's ``__init__``, ``__repr__``, ``__eq__`` (...) as Python source
and runs ``exec`` on it: about 540 small texts parsed and compiled in every process. pydantic
resolving the configuration models' annotations makes about 1,000 ``typing.ForwardRef``s,
each compiling its text, and ``collections.namedtuple`` evaluates a ``lambda`` for each
named tuple. The modules imported also compile about 175 regular expressions at import
(``re``'s own cache lives as long as the process), parsed and translated in Python. Those
texts and patterns are the same from one run to the next, so the command line's process
(:func:`recordsync.cli.startup.leave_out_unused`; a library user's process is untouched)
gives ``dataclasses``, ``typing`` and ``collections`` an ``exec``, ``compile`` and ``eval`` of
their own (module globals shadowing the built-ins, only for them), and ``re`` a compiler of
its own (``re._compiler.compile``), that look the text or the pattern up in the cache first.
A text is compiled only when the cache does not hold it, exactly as the built-in would (no
compiler flags inherited), and the code object is the one the built-in would have made; a
pattern's translation (what ``re``'s parser and compiler hand to ``_sre.compile``) is kept,
and the pattern object is made from it by ``_sre.compile``, as ``re`` makes it.

The cache is a file in the user's cache folder (``$XDG_CACHE_HOME/recordsync``, by default
``~/.cache/recordsync``), one per Python version (``compiled-cpython-311.marshal``), holding
the interpreter's magic number (another interpreter's file is ignored) and, in ``marshal``
form, the code objects by ``(mode, filename, text)`` and the translations by ``(pattern,
flags)`` with the regular-expression engine's own magic number (another engine's are
ignored). It is read once, when the command line starts, and only if it belongs to this user
and is writable by no one else (it holds code); unreadable, corrupt or foreign, it is ignored
and written again. It is written (to a temporary file, then renamed: concurrent runs never
see half a file) when the process compiled texts or patterns it did not hold, right after a
command's imports (:meth:`CodeCache.release`), and not at all under
``PYTHONDONTWRITEBYTECODE`` (as Python writes no bytecode then) nor for a few misses
(:data:`WRITE_AFTER`). Entries of other commands
and versions are kept up to :data:`MAX_ENTRIES`; past that, the file keeps only what this
process used. After the release the modules compile as before: the cache's entries are not
held for the rest of the run.
"""

from __future__ import annotations

import _sre
import builtins
import collections
import contextlib
import dataclasses
import importlib.util
import marshal
import os
import re
import stat
import sys
import threading
import typing
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

WRITE_AFTER = 8
"""Texts and patterns a process must compile (not find) for the file to be written again: a
pattern built from a set (``tokenize``'s, in every process that imports ``inspect``) is a new
text in every process (the order of a set of strings changes with the hash seed), and one
such does not rewrite the file at every run."""

MAX_ENTRIES = 20_000
"""Texts and patterns the file keeps (a run uses about 1,000) before it is cut back to one
process's."""

_Key = tuple[str, str, str]
_Pattern = tuple[str | bytes, int]
_Translated = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]
"""What ``re._compiler.compile`` hands to ``_sre.compile`` after the pattern: its flags, its
code, its number of groups - 1, the group index and the index's inverse."""
_COMPILE, _EXEC, _EVAL = builtins.compile, builtins.exec, builtins.eval
_RE_COMPILER: Any = getattr(re, "_compiler", None)  # private API: without it, no regexes
_RE_COMPILE: Any = getattr(_RE_COMPILER, "compile", None)
_RE_PARSE: Any = getattr(getattr(re, "_parser", None), "parse", None)
_RE_CODE: Any = getattr(_RE_COMPILER, "_code", None)
_SRE_MAGIC: int | None = getattr(getattr(re, "_constants", None), "MAGIC", None)
_HOOKED: tuple[tuple[ModuleType, str], ...] = (
    (dataclasses, "exec"),
    (typing, "compile"),
    (collections, "eval"),
)


def cache_file() -> Path:
    """This Python's cache file: ``$XDG_CACHE_HOME/recordsync`` (or ``~/.cache/recordsync``;
    a relative ``XDG_CACHE_HOME`` is ignored, as the XDG specification says)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "recordsync" / f"compiled-{sys.implementation.cache_tag}.marshal"


class CodeCache:
    """Compiled texts by ``(mode, filename, text)`` and translated regular expressions by
    ``(pattern, flags)``, read from and written to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes, self.regexes = _read(path)
        self.loaded = len(self.codes) + len(self.regexes)
        self.used: set[_Key] = set()
        self.used_regexes: set[_Pattern] = set()
        self.compiled = 0
        """Texts and patterns this process compiled (not in the cache)."""
        self._stand_ins: dict[str, Any] = {}
        self._lock = threading.Lock()

    def code(self, source: str, filename: str, mode: str) -> CodeType:
        """The code object ``compile(source, filename, mode)`` makes, from the cache if it
        holds it (compiled with no flags of the caller's, as ``exec`` of a text from
        ``dataclasses`` does)."""
        key = (mode, filename, source)
        found = self.codes.get(key)
        if found is None:
            found = _COMPILE(source, filename, mode, 0, True)
            with self._lock:
                self.codes[key] = found
                self.compiled += 1
        self.used.add(key)
        return found

    def regex(self, pattern: str | bytes, flags: int) -> Any:
        """The pattern object ``re`` compiles for ``pattern`` (with ``flags``), its
        translation from the cache if it holds one ``_sre.compile`` takes."""
        key = (pattern, flags)
        self.used_regexes.add(key)
        found = self.regexes.get(key)
        if found is not None:
            try:
                return _sre.compile(pattern, *found)
            except (TypeError, ValueError, OverflowError, RuntimeError):  # not a translation
                pass
        parsed = _RE_PARSE(pattern, flags)
        code = [int(op) for op in _RE_CODE(parsed, flags)]  # opcodes: int subclasses
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, i in groupindex.items():
            indexgroup[i] = name
        groups = parsed.state.groups - 1
        found = (flags | parsed.state.flags, code, groups, groupindex, tuple(indexgroup))
        with self._lock:
            self.regexes[key] = found
            self.compiled += 1
        return _sre.compile(pattern, *found)

    @property
    def installed(self) -> bool:
        return bool(self._stand_ins)

    def install(self) -> None:
        """``dataclasses``' ``exec``, ``typing``'s ``compile``, ``collections``' ``eval`` and
        ``re``'s compiler through the cache (idempotent)."""
        if self._stand_ins:
            return
        self._stand_ins = {"exec": self._exec, "compile": self._compile, "eval": self._eval}
        for module, name in _HOOKED:
            setattr(module, name, self._stand_ins[name])
        if _RE_COMPILE is not None and None not in (_RE_PARSE, _RE_CODE, _SRE_MAGIC):
            self._stand_ins["regex"] = _RE_COMPILER.compile = self._re_compile

    def release(self) -> None:
        """The three modules compile as before; the file written if this process compiled
        texts it did not hold (and bytecode may be written); the code objects let go."""
        if not self._stand_ins:
            return
        for module, name in _HOOKED:
            if vars(module).get(name) is self._stand_ins[name]:
                delattr(module, name)
        if "regex" in self._stand_ins and _RE_COMPILER.compile is self._stand_ins["regex"]:
            _RE_COMPILER.compile = _RE_COMPILE
        self._stand_ins = {}
        if self.compiled >= WRITE_AFTER and not sys.dont_write_bytecode:
            codes, regexes = self.codes, self.regexes
            if len(codes) + len(regexes) > MAX_ENTRIES:
                codes = {key: codes[key] for key in self.used}
                regexes = {key: regexes[key] for key in self.used_regexes}
            _write(self.path, codes, regexes)
        self.codes, self.used, self.regexes, self.used_regexes = {}, set(), {}, set()

    def _re_compile(self, pattern: Any, flags: int = 0) -> Any:
        if isinstance(pattern, (str, bytes)) and not flags & re.DEBUG:
            return self.regex(pattern, int(flags))
        return _RE_COMPILE(pattern, flags)

    def _exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if isinstance(source, str):
            source = self.code(source, "<string>", "exec")
        _EXEC(source, globals, locals)

    def _eval(self, source: Any, globals: Any = None, locals: Any = None, /) -> Any:
        if isinstance(source, str):
            source = self.code(source, "<string>", "eval")
        return _EVAL(source, globals, locals)

    def _compile(
        self,
        source: Any,
        filename: Any,
        mode: str,
        flags: int = 0,
        dont_inherit: bool = False,
        optimize: int = -1,
        **kwargs: Any,
    ) -> Any:
        plain = not flags and optimize == -1 and not kwargs
        if plain and isinstance(source, str) and isinstance(filename, str):
            return self.code(source, filename, mode)
        return _COMPILE(source, filename, mode, flags, dont_inherit, optimize, **kwargs)


def _read(path: Path) -> tuple[dict[_Key, CodeType], dict[_Pattern, _Translated]]:
    """The cache in ``path``: empty when missing, unreadable, another interpreter's, corrupt,
    not this user's or writable by others (the patterns alone: another engine's)."""
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return {}, {}
            if hasattr(os, "getuid") and info.st_uid != os.getuid():
                return {}, {}
            data = f.read()
        magic = importlib.util.MAGIC_NUMBER
        if data[: len(magic)] != magic:
            return {}, {}
        # from bytes: marshal.load(f) reads a file object piece by piece, ten times slower
        content = marshal.loads(memoryview(data)[len(magic) :])
    except (OSError, EOFError, ValueError, TypeError):
        return {}, {}
    if not isinstance(content, dict):
        return {}, {}
    texts, patterns = content.get("texts"), content.get("regexes")
    codes = {
        key: code
        for key, code in (texts.items() if isinstance(texts, dict) else ())
        if isinstance(code, CodeType)
        and isinstance(key, tuple)
        and len(key) == 3
        and all(isinstance(part, str) for part in key)
    }
    if content.get("sre") != _SRE_MAGIC or not isinstance(patterns, dict):
        return codes, {}
    regexes = {
        key: translated
        for key, translated in patterns.items()
        if isinstance(key, tuple)
        and len(key) == 2
        and isinstance(key[0], (str, bytes))
        and isinstance(key[1], int)
        and _translation(translated)
    }
    return codes, regexes


def _translation(value: object) -> bool:
    """Whether ``value`` has the shape of a pattern's translation (:data:`_Translated`); its
    code's items are checked by ``_sre.compile`` when it is used (:meth:`CodeCache.regex`)."""
    if not isinstance(value, tuple) or len(value) != 5:
        return False
    flags, code, groups, groupindex, indexgroup = value
    return (
        isinstance(flags, int)
        and isinstance(code, list)
        and isinstance(groups, int)
        and isinstance(groupindex, dict)
        and isinstance(indexgroup, tuple)
    )


def _write(
    path: Path, codes: dict[_Key, CodeType], regexes: dict[_Pattern, _Translated]
) -> None:
    """The cache to ``path`` (a temporary file renamed over it); a failure leaves no file."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as f:
            f.write(importlib.util.MAGIC_NUMBER)
            marshal.dump({"texts": codes, "regexes": regexes, "sre": _SRE_MAGIC}, f)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            temporary.unlink()

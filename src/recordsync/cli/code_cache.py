"""Source text that the standard library compiles at run time, compiled once and cached on disk
for the next ``recordsync`` process (start-up: about 60 ms of CPU in a 1,000-row run).

A run's imports make about 120 dataclasses (recordsync's own and its libraries'), and
``dataclasses`` writes each one's ``__init__``, ``__repr__``, ``__eq__`` (...) as Python source
and runs ``exec`` on it: about 540 small texts parsed and compiled in every process. pydantic
resolving the configuration models' annotations makes about 1,000 ``typing.ForwardRef``s,
each compiling its text, and ``collections.namedtuple`` evaluates a ``lambda`` for each
named tuple. Those texts are the same from one run to the next, so the command line's process
(:func:`recordsync.cli.startup.leave_out_unused`; a library user's process is untouched)
gives those three modules an ``exec``, ``compile`` and ``eval`` of their own (module globals
shadowing the built-ins, only for them) that look the text up in a cache of code objects
first: a text is compiled only when the cache does not hold it, exactly as the built-in
would (no compiler flags inherited), and the code object is the same one the built-in would
have made.

The cache is a file in the user's cache folder (``$XDG_CACHE_HOME/recordsync``, by default
``~/.cache/recordsync``), one per Python version (``compiled-cpython-311.marshal``), holding
the interpreter's magic number (another interpreter's file is ignored) and a ``marshal`` dict
from ``(mode, filename, text)`` to the code object. It is read once, when the command line
starts, and only if it belongs to this user and is writable by no one else (it holds code);
unreadable, corrupt or foreign, it is ignored and written again. It is written (to a
temporary file, then renamed: concurrent runs never see half a file) when the process
compiled texts it did not hold, right after a command's imports (:meth:`CodeCache.release`),
and not at all under ``PYTHONDONTWRITEBYTECODE`` (as Python writes no bytecode then). Texts of
other commands and versions are kept up to :data:`MAX_ENTRIES`; past that, the file keeps
only what this process used. After the release the three modules compile as before: the
cache's code objects are not held for the rest of the run.
"""

from __future__ import annotations

import builtins
import collections
import contextlib
import dataclasses
import importlib.util
import marshal
import os
import stat
import sys
import threading
import typing
from pathlib import Path
from types import CodeType, ModuleType
from typing import Any

MAX_ENTRIES = 20_000
"""Texts the file keeps (a run uses about 900) before it is cut back to one process's."""

_Key = tuple[str, str, str]
_COMPILE, _EXEC, _EVAL = builtins.compile, builtins.exec, builtins.eval
_HOOKED: tuple[tuple[ModuleType, str], ...] = (
    (dataclasses, "exec"),
    (typing, "compile"),
    (collections, "eval"),
)


def cache_file() -> Path:
    """This Python's cache file: ``$XDG_CACHE_HOME/recordsync`` (or ``~/.cache/recordsync``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "recordsync" / f"compiled-{sys.implementation.cache_tag}.marshal"


class CodeCache:
    """Compiled texts by ``(mode, filename, text)``, read from and written to ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes: dict[_Key, CodeType] = _read(path)
        self.loaded = len(self.codes)
        self.used: set[_Key] = set()
        self.compiled = 0
        """Texts this process compiled (not in the cache)."""
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

    @property
    def installed(self) -> bool:
        return bool(self._stand_ins)

    def install(self) -> None:
        """``dataclasses``' ``exec``, ``typing``'s ``compile`` and ``collections``' ``eval``
        through the cache (idempotent)."""
        if self._stand_ins:
            return
        self._stand_ins = {"exec": self._exec, "compile": self._compile, "eval": self._eval}
        for module, name in _HOOKED:
            setattr(module, name, self._stand_ins[name])

    def release(self) -> None:
        """The three modules compile as before; the file written if this process compiled
        texts it did not hold (and bytecode may be written); the code objects let go."""
        if not self._stand_ins:
            return
        for module, name in _HOOKED:
            if vars(module).get(name) is self._stand_ins[name]:
                delattr(module, name)
        self._stand_ins = {}
        if self.compiled and not sys.dont_write_bytecode:
            keep = self.codes
            if len(keep) > MAX_ENTRIES:
                keep = {key: keep[key] for key in self.used}
            _write(self.path, keep)
        self.codes, self.used = {}, set()

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


def _read(path: Path) -> dict[_Key, CodeType]:
    """The cache in ``path``: empty when missing, unreadable, another interpreter's, corrupt,
    not this user's or writable by others."""
    try:
        with open(path, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                return {}
            if hasattr(os, "getuid") and info.st_uid != os.getuid():
                return {}
            if f.read(len(importlib.util.MAGIC_NUMBER)) != importlib.util.MAGIC_NUMBER:
                return {}
            codes = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(codes, dict):
        return {}
    return {
        key: code
        for key, code in codes.items()
        if isinstance(code, CodeType)
        and isinstance(key, tuple)
        and len(key) == 3
        and all(isinstance(part, str) for part in key)
    }


def _write(path: Path, codes: dict[_Key, CodeType]) -> None:
    """``codes`` to ``path`` (a temporary file renamed over it); a failure leaves no file."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as f:
            f.write(importlib.util.MAGIC_NUMBER)
            marshal.dump(codes, f)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            temporary.unlink()

"""Keep pyarrow from importing pandas in a ``recordsync`` command's process (start-up: pandas
is ~150 ms of import time and ~60 MB of memory that a run never uses; issue 14).

recordsync does not use pandas. pyarrow imports it all the same, the first time it converts
a Python value (``pa.array([...])``, ``pa.scalar(...)``, a compute call with a Python
scalar), in two places that each look once per process:

- the Python shim of its pandas integration (``pyarrow.lib._pandas_api``), whose soft checks
  ("is this a pandas object?") import pandas on first use;
- the C++ converters (``InitPandasStaticData``: ``pandas.NaT``, ``pandas.NA``, ...), run
  by every type inference.

:func:`keep_pandas_out`, called by :func:`recordsync.cli.entry` (the console script and
``python -m recordsync``, never the library), makes both look while a meta-path finder makes
``import pandas`` raise ImportError (not ``sys.modules["pandas"] = None``: the shim's
Cython import then returns None and pyarrow fails). They record "no pandas" and do not look
again; an explicit pandas API (``Table.to_pandas``) still imports it (the shim retries when
asked for pandas itself). What the process gives up: the C++ converters do not recognise
pandas objects (``pd.NaT``, ``pd.NA``, ``pd.Timestamp`` nanoseconds) in Python sequences
converted later. A command of recordsync never hands them any; a library user's process
(the Dagster asset, an Airflow task) is untouched.

pyarrow is not imported at entry (``--help`` does not need it): the look is made right after
pyarrow's own import, whoever imports it. It relies on private pyarrow API, so anything
unexpected (a missing attribute, any exception) leaves pyarrow as it is.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType


class _NoPandas(importlib.abc.MetaPathFinder):
    """``import pandas`` (and its submodules) raises ImportError while installed."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ImportError("pandas is not used by recordsync's command line", name=fullname)
        return None


def _look_without_pandas(pa: ModuleType) -> None:
    """Let pyarrow's shim and C++ converters look for pandas once, and not find it."""
    shim = getattr(getattr(pa, "lib", None), "_pandas_api", None)
    if shim is None or "pandas" in sys.modules:
        return
    block = _NoPandas()
    sys.meta_path.insert(0, block)
    try:
        shim.have_pandas  # noqa: B018 - the property makes the shim look
        pa.array([None])  # a type inference: the C++ converters look (and the shim, again)
    except Exception:  # private API: whatever it does now, pyarrow is left as it is
        pass
    finally:
        sys.meta_path.remove(block)


class _ThenLook(importlib.abc.Loader):
    """pyarrow's own loader, then :func:`_look_without_pandas` on the module."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader  # the module keeps pyarrow's own loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _look_without_pandas(module)


class _AfterPyarrow(importlib.abc.MetaPathFinder):
    """Finds pyarrow through the other finders, with :class:`_ThenLook` as its loader; then
    leaves ``sys.meta_path``."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "pyarrow":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec: importlib.machinery.ModuleSpec | None = (
                find(fullname, path, target) if find is not None else None
            )
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ThenLook(spec.loader)
                return spec
        return None


def keep_pandas_out() -> None:
    """Make pyarrow look for pandas without finding it: now if pyarrow is imported, else
    right after it is (unless pandas is already imported)."""
    if "pandas" in sys.modules:
        return
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        _look_without_pandas(pa)
    elif not any(isinstance(f, _AfterPyarrow) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterPyarrow())

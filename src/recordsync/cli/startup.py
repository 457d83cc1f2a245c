"""What a ``recordsync`` command's process leaves out at start-up: imports and scans it never
uses (issue 14: start-up). Called by :func:`recordsync.cli.entry` (the console script and
``python -m recordsync``), never by the library: a library user's process (the Dagster
asset, an Airflow task) is untouched.

**pandas** (~150 ms of imports, ~60 MB). recordsync does not use it; pyarrow imports it all
the same the first time it converts a Python value (``pa.array([...])``, ``pa.scalar(...)``,
a compute call with a Python scalar), in two places that each look once per process: the
Python shim of its pandas integration (``pyarrow.lib._pandas_api``), whose soft checks ("is
this a pandas object?") import pandas on first use, and the C++ converters
(``InitPandasStaticData``: ``pandas.NaT``, ``pandas.NA``, ...), run by every type
inference. Both are made to look while a meta-path finder makes ``import pandas`` raise
ImportError (not ``sys.modules["pandas"] = None``: the shim's Cython import then returns None
and pyarrow fails); they record "no pandas" and do not look again. An explicit pandas API
(``Table.to_pandas``) still imports it (the shim retries when asked for pandas itself). What
the process gives up: the C++ converters do not recognise pandas objects (``pd.NaT``,
``pd.NA``, ``pd.Timestamp`` nanoseconds) in Python sequences converted later; recordsync
never hands them any. pyarrow is not imported at entry (``--help`` does not need it): the
look is made right after pyarrow's own import, whoever imports it. It relies on private
pyarrow API, so anything unexpected (a missing attribute, any exception) leaves pyarrow as
it is.

**httpx's command line** (``httpx._main``: rich, pygments, click; ~30 ms): ``import httpx``
imports it to offer ``httpx.main``, and falls back to a stub when it cannot be imported
(httpx installed without its ``cli`` extra). recordsync never calls ``httpx.main``, so its
import raises ImportError here and httpx takes that fallback.

**pydantic's plugins**: the first model pydantic builds looks for plugins in the entry points
of every installed distribution (~14 ms of CPU in an environment of 200 distributions, a few
ms in a small one). recordsync's models are its own configuration files, which no plugin is
asked to see, so ``PYDANTIC_DISABLE_PLUGINS`` is set to ``__all__`` for the process, unless
it was set already (recordsync starts no child process that would inherit it).

**numpy's BLAS threads**: importing numpy starts OpenBLAS, which starts a thread per core
and warms them up (~25 ms of CPU at start-up on two cores, and threads that compete with the
run's own). recordsync does no linear algebra (no ``numpy.linalg``, ``dot`` or ``matmul``),
so ``OPENBLAS_NUM_THREADS`` is set to 1 for the process unless it was set already.

**The cyclic garbage collector while a command's modules are imported**
(:func:`importing`): importing a run's modules (numpy, pyarrow, pydantic and its models,
recordsync's own) allocates about 110,000 tracked objects, all alive until the process ends;
with the collector on, CPython walks them again and again as they are made (~30-50 ms of a
run's start-up). It is paused for the imports (``gc_pause``, :mod:`recordsync.tuning`),
collects once when they are done, and runs as before.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from contextlib import AbstractContextManager
from types import ModuleType
from typing import TYPE_CHECKING, Any

from recordsync.tuning.gcpause import gc_paused

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

_REFUSED_ALWAYS = frozenset({"httpx._main"})


class _Refuse:
    """A meta-path finder: importing one of ``names`` (or, with ``packages``, a submodule of
    one) raises ImportError, as if it were not installed."""

    def __init__(self, names: frozenset[str], packages: bool = False) -> None:
        self.names, self.packages = names, packages

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        top = fullname.partition(".")[0] if self.packages else fullname
        if top in self.names:
            raise ImportError(f"{fullname} is not used by recordsync's command line", name=fullname)
        return None


def _look_without_pandas(pa: ModuleType) -> None:
    """Let pyarrow's shim and C++ converters look for pandas once, and not find it."""
    shim = getattr(getattr(pa, "lib", None), "_pandas_api", None)
    if shim is None or "pandas" in sys.modules:
        return
    block = _Refuse(frozenset({"pandas"}), packages=True)
    sys.meta_path.insert(0, block)
    try:
        shim.have_pandas  # noqa: B018 - the property makes the shim look
        pa.array([None])  # a type inference: the C++ converters look (and the shim, again)
    except Exception:  # private API: whatever it does now, pyarrow is left as it is
        pass
    finally:
        sys.meta_path.remove(block)


class _ThenLook:
    """pyarrow's own loader, then :func:`_look_without_pandas` on the module."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader  # the module keeps pyarrow's own loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        sys.meta_path = [f for f in sys.meta_path if not isinstance(f, _AfterPyarrow)]
        self.loader.exec_module(module)
        _look_without_pandas(module)


class _AfterPyarrow:
    """A meta-path finder: finds pyarrow through the other finders, with :class:`_ThenLook`
    as its loader (which takes this finder out of ``sys.meta_path`` when pyarrow is loaded;
    ``importlib.util.find_spec("pyarrow")`` alone changes nothing)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "pyarrow":
            return None
        for finder in sys.meta_path:
            if isinstance(finder, _AfterPyarrow):
                continue
            find = getattr(finder, "find_spec", None)
            spec: ModuleSpec | None = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ThenLook(spec.loader)  # type: ignore[assignment]
                return spec
        return None


def importing(*, collect: bool = True) -> AbstractContextManager[None]:
    """Around the import of a command's modules: the cyclic garbage collector paused (with
    the ``gc_pause`` switch of :mod:`recordsync.tuning`, on from the command line), then one
    full collection (``collect``), and the collector as it was before, even on error. The
    collection walks what the imports made once and records it as long-lived; left to
    CPython, the first collections after the pause would walk it again, generation after
    generation. ``collect=False``: more imports follow (the command's own), whose block
    collects."""
    return gc_paused(_collect if collect else None)


def _collect() -> None:
    gc.collect()


def leave_out_unused() -> None:
    """Everything the module docstring lists, for this process (idempotent)."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if "numpy" not in sys.modules:  # read once, when numpy loads OpenBLAS
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if not any(isinstance(f, _Refuse) for f in sys.meta_path) and not any(
        name in sys.modules for name in _REFUSED_ALWAYS
    ):
        sys.meta_path.insert(0, _Refuse(_REFUSED_ALWAYS))
    if "pandas" in sys.modules:
        return
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        _look_without_pandas(pa)
    elif not any(isinstance(f, _AfterPyarrow) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterPyarrow())

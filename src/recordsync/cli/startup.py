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

**pyarrow.compute's documentation** (~30 ms of a run's start-up, two thirds of that module's
import): importing ``pyarrow.compute`` wraps each of its ~290 compute functions in a Python
function with a docstring and a signature, built with pyarrow's numpydoc module
(``pyarrow.vendored.docscrape``, which imports pydoc) parsing each options class's
docstring, ``inspect.signature`` reading each options class's signature from its text
(through the tokenizer), and ``textwrap.dedent`` on every piece. A command's process never
shows them. So while ``pyarrow.compute`` is imported (whoever imports it first), in that
thread only: the numpydoc module is a stand-in whose parser finds no sections (the real one
is not imported), ``inspect.signature`` of a class of ``pyarrow._compute`` has no
parameters, and ``dedent`` leaves the text as it is; ``inspect.signature`` and
``textwrap.dedent`` are put back right after (pyarrow.compute keeps functions that work as
the real ones from then on). The functions work as before (options by keyword or
``options=``); their docstrings and signatures leave the options out (``help(pc.utf8_trim)``
lists no ``characters``). It relies on private pyarrow API: should the import fail that way,
the module is imported again as it is.

**httpx's command line** (``httpx._main``: rich, pygments, click; ~30 ms): ``import httpx``
imports it to offer ``httpx.main``, and falls back to a stub when it cannot be imported
(httpx installed without its ``cli`` extra). recordsync never calls ``httpx.main``, so its
import raises ImportError here and httpx takes that fallback.

**pydantic's plugins**: the first model pydantic builds looks for plugins in the entry points
of every installed distribution (~14 ms of CPU in an environment of 200 distributions, a few
ms in a small one). recordsync's models are its own configuration files, which no plugin is
asked to see, so ``PYDANTIC_DISABLE_PLUGINS`` is set to ``__all__`` for the process, unless
it was set already (recordsync starts no child process that would inherit it).

**importlib.metadata** (~5 ms): pydantic's plugin loader imports it at the top of its
module, to read the entry points of every installed distribution when plugins are on. With
them off (above), its ``entry_points`` is a function that imports ``importlib.metadata`` when
called (pydantic never calls it then); nothing else a run imports needs that module. As with
pyarrow.compute, should that import fail, the loader is imported again as it is.

**Texts the standard library compiles at run time** (~60 ms of CPU: ``dataclasses``' methods,
``typing.ForwardRef``, ``collections.namedtuple``): compiled once and cached on disk for the
next process, until the command's imports are in (:mod:`recordsync.cli.code_cache`).

**numpy's BLAS threads**: importing numpy starts OpenBLAS, which starts a thread per core
and warms them up (~25 ms of CPU at start-up on two cores, and threads that compete with the
run's own). recordsync does no linear algebra (no ``numpy.linalg``, ``dot`` or ``matmul``),
so ``OPENBLAS_NUM_THREADS`` is set to 1 for the process unless it was set already.

**The cyclic garbage collector while a command's modules are imported**
(:func:`importing`): importing a run's modules (numpy, pyarrow, pydantic and its models,
recordsync's own) allocates about 110,000 tracked objects, all alive until the process ends;
with the collector on, CPython walks them again and again as they are made (~30-50 ms of a
run's start-up). It is paused for the imports (``gc_pause``, :mod:`recordsync.tuning`) and
runs as before once they are done, what they made moved to the oldest generation first
(``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no walk). A full collection (one
collection that walks everything) used to do that move: 20-40 ms, about a tenth of what a
1,000-row run adds to a bare loop, to free a few hundred objects in garbage cycles (the
imports leave about 800). Now those wait for the first full collection the run makes
itself: a small run makes none; a large one makes one early on (CPython's own rule, or
:class:`recordsync.tuning.gcpause.BatchGC`'s), so its peak is the same. Nothing stays
frozen: parking the imports' objects in the permanent generation for the whole run would
also keep ``BatchGC`` from parking each batch (it parks only when nothing else is frozen),
which measured 202 MB of peak RSS on 100k-row runs into the no-op server against 199 MB.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import os
import sys
import textwrap
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from types import ModuleType
from typing import TYPE_CHECKING, Any

from recordsync.cli.code_cache import CodeCache, cache_file
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


def _then_look(module: ModuleType, run: Callable[[], None]) -> None:
    """pyarrow's import, then :func:`_look_without_pandas`."""
    run()
    _look_without_pandas(module)


class _NoSections:
    """Stands for pyarrow's numpydoc parser while pyarrow.compute is imported: a docstring
    without sections (no parameters to list)."""

    def __init__(self, docstring: object = None, config: object = None) -> None:
        pass

    def __getitem__(self, key: str) -> list[Any]:
        return []


_NO_PARAMETERS = inspect.Signature()
_DUNDERS = ("__name__", "__doc__", "__package__", "__loader__", "__spec__", "__file__")
_DOCSCRAPE = "pyarrow.vendored.docscrape"
_quiet: set[int] = set()
"""The threads importing pyarrow.compute now (:func:`_compute_without_option_docs`)."""
_dedent, _signature = textwrap.dedent, inspect.signature


def _option_docs(docstring: object, config: object = None) -> Any:
    """pyarrow's ``docscrape.NumpyDocString``: no sections while pyarrow.compute is imported
    (in that thread), else the real parser (pyarrow.compute keeps this function)."""
    real = sys.modules.get(_DOCSCRAPE)
    if threading.get_ident() in _quiet or real is _DOCS_STAND_IN:
        return _NoSections()
    real = importlib.import_module(_DOCSCRAPE)
    return real.NumpyDocString(docstring, config)


def _docs_attribute(name: str) -> Any:
    """Any other name of the stand-in for pyarrow's docscrape: the real module's."""
    real = importlib.import_module(_DOCSCRAPE)
    if real is _DOCS_STAND_IN:  # asked while pyarrow.compute is imported: pyarrow changed
        raise AttributeError(name)
    return getattr(real, name)


_DOCS_STAND_IN = ModuleType(_DOCSCRAPE)
_DOCS_STAND_IN.NumpyDocString = _option_docs  # type: ignore[attr-defined]
_DOCS_STAND_IN.__getattr__ = _docs_attribute  # type: ignore[method-assign]


def _quiet_dedent(text: str) -> str:
    """``textwrap.dedent``, which pyarrow.compute's docstrings go through: the text as it is
    while pyarrow.compute is imported (in that thread)."""
    return text if threading.get_ident() in _quiet else _dedent(text)


def _quiet_signature(obj: Any, *args: Any, **kwargs: Any) -> inspect.Signature:
    """``inspect.signature``: no parameters for a class of ``pyarrow._compute`` while
    pyarrow.compute is imported (in that thread)."""
    if (
        threading.get_ident() in _quiet
        and isinstance(obj, type)
        and obj.__module__ == "pyarrow._compute"
    ):
        return _NO_PARAMETERS
    return _signature(obj, *args, **kwargs)


def _compute_without_option_docs(module: ModuleType, run: Callable[[], None]) -> None:
    """pyarrow.compute's import with the documentation of its functions left as written:
    pyarrow's numpydoc module (``docscrape``, which imports pydoc) not imported, the options
    classes' docstrings not parsed and their signatures not read, the docstrings' pieces not
    dedented; then ``textwrap.dedent`` and ``inspect.signature`` as they were (the module
    keeps :func:`_quiet_dedent` and :func:`_option_docs`, which work as the real ones
    afterwards). Should that fail (pyarrow changed), the module is imported again as it
    is."""
    here = threading.get_ident()
    stand_in = _DOCSCRAPE not in sys.modules
    if stand_in:
        sys.modules[_DOCSCRAPE] = _DOCS_STAND_IN
    _quiet.add(here)
    textwrap.dedent, inspect.signature = _quiet_dedent, _quiet_signature

    def restore() -> None:
        textwrap.dedent, inspect.signature = _dedent, _signature
        _quiet.discard(here)
        if stand_in and sys.modules.get(_DOCSCRAPE) is _DOCS_STAND_IN:
            del sys.modules[_DOCSCRAPE]

    _run_else_as_is(module, run, restore)


def _run_else_as_is(
    module: ModuleType, run: Callable[[], None], restore: Callable[[], None]
) -> None:
    """Execute ``module`` (``run``) with its stand-ins in place, then ``restore`` what they
    replaced; should the execution fail, execute the module again as it is, from a clean
    namespace."""
    try:
        run()
        return
    except Exception:
        pass
    finally:
        restore()
    kept = {k: module.__dict__[k] for k in _DUNDERS if k in module.__dict__}
    module.__dict__.clear()
    module.__dict__.update(kept)
    run()


_PLUGINS_OFF = ("__all__", "1", "true")  # the values pydantic reads as "no plugins at all"


def _plugin_loader_without_metadata(module: ModuleType, run: Callable[[], None]) -> None:
    """pydantic's plugin loader, imported while ``PYDANTIC_DISABLE_PLUGINS`` says no plugins,
    with its ``from importlib.metadata import entry_points`` given a function that imports
    ``importlib.metadata`` when called (never, with plugins off); otherwise as it is."""
    if "importlib.metadata" in sys.modules or os.environ.get("PYDANTIC_DISABLE_PLUGINS") not in (
        _PLUGINS_OFF
    ):
        run()
        return
    stand_in = ModuleType("importlib.metadata")
    stand_in.entry_points = _entry_points  # type: ignore[attr-defined]
    sys.modules["importlib.metadata"] = stand_in

    def restore() -> None:
        if sys.modules.get("importlib.metadata") is stand_in:
            del sys.modules["importlib.metadata"]

    _run_else_as_is(module, run, restore)


def _entry_points(**params: Any) -> Any:
    """``importlib.metadata.entry_points``, imported when first called."""
    return importlib.import_module("importlib.metadata").entry_points(**params)


class _Hooked:
    """A module's own loader, run by ``hook(module, run)`` (``run()`` executes the module)."""

    def __init__(self, loader: Any, hook: Callable[[ModuleType, Callable[[], None]], None]):
        self.loader, self.hook = loader, hook

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader  # the module keeps its own loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        sys.meta_path = [f for f in sys.meta_path if not _hooks(f, module.__name__)]
        self.hook(module, lambda: self.loader.exec_module(module))


class _Hook:
    """A meta-path finder: finds the module ``name`` through the other finders, with
    :class:`_Hooked` as its loader (which takes this finder out of ``sys.meta_path`` when the
    module is loaded; ``importlib.util.find_spec(name)`` alone changes nothing)."""

    def __init__(self, name: str, hook: Callable[[ModuleType, Callable[[], None]], None]):
        self.name, self.hook = name, hook

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            if isinstance(finder, _Hook):
                continue
            find = getattr(finder, "find_spec", None)
            spec: ModuleSpec | None = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Hooked(spec.loader, self.hook)  # type: ignore[assignment]
                return spec
        return None


def _hooks(finder: object, name: str) -> bool:
    return isinstance(finder, _Hook) and finder.name == name


def _hook(name: str, hook: Callable[[ModuleType, Callable[[], None]], None]) -> None:
    """Import ``name`` through ``hook`` when it is first imported (once)."""
    if name not in sys.modules and not any(_hooks(f, name) for f in sys.meta_path):
        sys.meta_path.insert(0, _Hook(name, hook))


def importing(*, promote: bool = True) -> AbstractContextManager[None]:
    """Around the import of a command's modules: the cyclic garbage collector paused (with
    the ``gc_pause`` switch of :mod:`recordsync.tuning`, on from the command line), then
    what the imports made moved to the oldest generation (``promote``), and the collector as
    it was before, even on error. Left to CPython, the first collections after the pause
    would walk it all again, generation after generation; moved, it is walked by the next
    full collection only. ``promote=False``: more imports follow (the command's own), whose
    block promotes."""
    return gc_paused(_promote if promote else None)


def _promote() -> None:
    """Everything the collector tracks to its oldest generation, without walking it (nothing
    stays frozen); left as it is when something else froze objects (unfreezing would undo
    that). The command's imports are in: the cache of compiled texts is done with too."""
    compiled_texts_done()
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


_CODE_CACHE: list[CodeCache] = []
"""The process's cache of compiled texts (:mod:`recordsync.cli.code_cache`), once made."""


def compiled_texts_done() -> None:
    """The cache of compiled texts released (written if it grew); idempotent, and nothing
    when :func:`leave_out_unused` did not install one."""
    for cache in _CODE_CACHE:
        cache.release()


def leave_out_unused() -> None:
    """Everything the module docstring lists, for this process (idempotent)."""
    if not _CODE_CACHE and os.environ.get("RECORDSYNC_CODE_CACHE", "").lower() != "off":
        _CODE_CACHE.append(CodeCache(cache_file()))
        _CODE_CACHE[0].install()
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if "numpy" not in sys.modules:  # read once, when numpy loads OpenBLAS
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if not any(isinstance(f, _Refuse) for f in sys.meta_path) and not any(
        name in sys.modules for name in _REFUSED_ALWAYS
    ):
        sys.meta_path.insert(0, _Refuse(_REFUSED_ALWAYS))
    _hook("pyarrow.compute", _compute_without_option_docs)
    _hook("pydantic.plugin._loader", _plugin_loader_without_metadata)
    if "pandas" in sys.modules:
        return
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        _look_without_pandas(pa)
    else:
        _hook("pyarrow", _then_look)

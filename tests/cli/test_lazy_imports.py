"""What the command line imports: a command imports its own module, not every command's, and
the heavy stacks a command does not use stay out (start-up time of every run; issue 14).

Each case runs the CLI in a fresh interpreter and reads ``sys.modules`` after the command;
nothing here measures time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.cli.children import SRC, child_env, child_json
from tests.e2e.support import KEY, served

# the console script's own path (recordsync.cli.entry), its last call recording sys.modules
SCRIPT = """import gc, json, os, sys
seen = {}
class Seen:  # how the process was when the HTTP stack was imported
    def find_spec(self, name, path, target=None):
        if name == "httpcore" and name not in seen:
            cached = "exec" in vars(sys.modules["dataclasses"])
            seen[name] = {"gc": gc.isenabled(), "cached": cached}
sys.meta_path.insert(0, Seen())
def record(code, exit=os._exit, out=sys.argv[1]):
    loader = sys.modules.get("pydantic.plugin._loader")
    pc = sys.modules.get("pyarrow.compute")
    with open(out, "w") as f:
        json.dump({
            "code": code,
            "modules": sorted(sys.modules),
            "gc": gc.isenabled(),
            "plugins_looked_up": loader is not None and loader._plugins is not None,
            "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
            "compute_option_docs": pc is not None and "characters : " in pc.utf8_trim.__doc__,
            "compiled_texts_hooked": "exec" in vars(sys.modules["dataclasses"]),
            "seen": seen,
        }, f)
    exit(code)
os._exit = record
from recordsync.cli import entry
sys.argv = ["recordsync", *sys.argv[2:]]
entry()
"""
# never needed by these commands: the sandbox's server stack, the test tools
NEVER = ("starlette", "uvicorn", "a2wsgi", "hypothesis", "schemathesis", "pytest")
# the other commands' modules (click group resolved lazily) and what only they use
OTHER_COMMANDS = (
    "recordsync.cli.init_cmds",
    "recordsync.cli.sandbox_cmds",
    "recordsync.cli.state_cmds",
    "recordsync.cli.history_cmds",
    "recordsync.cli.validate_cmds",
    "recordsync.infer",
    "recordsync.sandbox",
)
# what only other sources use: a local CSV run needs neither Parquet nor remote filesystems
OTHER_SOURCES = ("pyarrow.parquet", "pyarrow.fs", "pyarrow._s3fs", "recordsync.read.parquet_reader")


def imported(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, set[str]]:
    got = recorded(tmp_path, *args, env=env)
    return got["code"], set(got["modules"])


def recorded(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = tmp_path / "modules.json"
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([SRC, *filter(None, [env.get("PYTHONPATH")])])
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")  # the cache of compiled texts
    subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out), *args],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
        timeout=600,
    )
    got: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return got


def tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_help_imports_no_data_or_http_stack(tmp_path: Path) -> None:
    code, modules = imported(tmp_path, "--help")
    assert code == 0
    assert tops(modules).isdisjoint({*NEVER, "pandas", "httpx", "rich"}), sorted(tops(modules))


def run_into_a_service(tmp_path: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """A two-row ``recordsync run`` into the sandbox over loopback, in a fresh interpreter,
    with the sample contacts mapping's kinds of fields (phone, dates, a list, a boolean)."""
    (tmp_path / "d.csv").write_text(
        "Email,Name,Phone,Newsletter,Tags,Last Contacted,Signed Up\n"
        "ada@x.example,Ada,+44 20 7468 1791,yes,VIP;Partner,12/01/2025,2025-02-16 10:30\n"
        "ben@x.example,Ben,+1 (555) 010-2000,no,,27/02/2025,2025-07-10 10:30\n",
        encoding="utf-8",
    )
    (tmp_path / "d.yaml").write_text(
        "object_type: contacts\nsource: {path: d.csv}\nname: Name\n"
        "match_by: [{by: email, column: Email}]\n"
        "fields:\n  email: Email\n  phone: Phone\n  newsletter_opt_in: Newsletter\n"
        "  tags: {column: Tags, split: ';'}\n"
        "  last_contacted: {column: Last Contacted, date_format: '%d/%m/%Y'}\n"
        "  signed_up_at: {column: Signed Up, datetime_format: '%Y-%m-%d %H:%M',"
        " timezone: Europe/Berlin}\n",
        encoding="utf-8",
    )
    given = os.environ if env is None else env
    env = {k: v for k, v in given.items() if not k.startswith("RECORDSYNC_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the cache of compiled texts is written
    env["RECORDSYNC_API_KEY"] = KEY
    with served(tmp_path / "sandbox.db") as url:
        return recorded(tmp_path, "run", "d.yaml", "--base-url", url, env=env)


def test_a_run_into_a_service_imports_only_the_run_command(tmp_path: Path) -> None:
    got = run_into_a_service(tmp_path)
    code, modules = got["code"], set(got["modules"])
    assert code == 0
    # the garbage collector, paused while the command's modules were imported, runs again
    assert got["gc"] is True
    # pydantic built the run's models without looking for plugins in every distribution
    assert "pydantic" in modules and got["plugins_looked_up"] is False
    # numpy loaded OpenBLAS with no threads of its own (a run does no linear algebra)
    assert "numpy" in modules and got["blas_threads"] == "1"
    assert "recordsync.cli.run_cmds" in modules and "recordsync.run.pipeline" in modules
    # the nightly fast path's digests (state store on) and pyarrow's conversions: no pandas;
    # httpx without its command line (rich, pygments: a run without a terminal shows no bar)
    assert {"recordsync.state.digests", "pyarrow.compute", "httpx"} <= modules
    # pyarrow.compute imported without the docs of its functions' options, nor pydoc
    assert got["compute_option_docs"] is False
    assert modules.isdisjoint({"pyarrow.vendored.docscrape", "pydoc"})
    unused = {*NEVER, "pandas", "rich", "pygments"}
    assert tops(modules).isdisjoint(unused), sorted(tops(modules) & unused)
    assert "httpx._main" not in modules
    # pydantic's plugin loader without the entry points of every distribution (plugins off)
    assert "pydantic.plugin._loader" in modules and "importlib.metadata" not in modules
    # numpy's masked arrays (~8 ms): a first run converts no numpy array to Arrow with
    # pa.array (pyarrow then looks at numpy.ma.MaskedArray: phone numbers' digit counts are
    # wrapped instead) and calls no np.unique
    assert "numpy.ma" not in modules
    loaded = {m for m in modules if m.startswith(OTHER_COMMANDS)}
    assert not loaded, sorted(loaded)
    assert modules.isdisjoint(OTHER_SOURCES), sorted(modules & set(OTHER_SOURCES))
    # the texts dataclasses, typing and namedtuple compiled: cached for the next process,
    # and those modules left as they were once the command's imports were in
    assert got["compiled_texts_hooked"] is False
    # the HTTP stack httpx imports for the run's first client (httpcore, h11) was imported
    # with the command's modules: collector paused, compiled texts and patterns cached
    assert got["seen"] == {"httpcore": {"gc": False, "cached": True}}
    assert list((tmp_path / "cache" / "recordsync").glob("compiled-*.marshal"))


def test_validate_imports_no_sandbox_stack_and_no_pandas(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("Name\nAda\n", encoding="utf-8")
    (tmp_path / "d.yaml").write_text(
        "object_type: deals\nsource: {path: d.csv}\nname: Name\n"
        "fields: {stage: {value: prospecting}}\n",  # checked against the embedded sandbox's seed
        encoding="utf-8",
    )
    code, modules = imported(tmp_path, "validate", "d.yaml")
    assert code == 0
    assert tops(modules).isdisjoint({*NEVER, "pandas"}), sorted(tops(modules))
    assert "recordsync.cli.run_cmds" not in modules


def test_every_command_is_listed_with_its_module() -> None:
    import importlib

    from recordsync.cli import COMMAND_MODULES

    for name in set(COMMAND_MODULES.values()):
        module = importlib.import_module(f"recordsync.cli.{name}")
        assert {COMMAND_MODULES.get(c.name or "") for c in module.COMMANDS} == {name}


PYARROW_AFTER_ENTRY = """import importlib.util, json, sys
from recordsync.cli.startup import leave_out_unused
leave_out_unused()
assert importlib.util.find_spec("pyarrow") is not None  # asking first changes nothing
import datetime, decimal
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
pc.add(pa.array([1, None]), 1)
pa.scalar(datetime.datetime(2026, 1, 1))
pa.array([decimal.Decimal("1.5"), None])
pa.array([True, None]).to_numpy(zero_copy_only=False)
pa.array(np.arange(3))
before = "pandas" in sys.modules
frame = pa.table({"a": [1, 2], "b": ["x", "y"]}).to_pandas()
json.dump({"before": before, "frame": frame.to_dict("list"), "after": "pandas" in sys.modules},
          sys.stdout)
"""


def test_pyarrow_converts_python_values_without_pandas_and_to_pandas_still_works() -> None:
    """After the CLI's probe (recordsync.cli.startup), pyarrow's conversions of Python
    values leave pandas out; an explicit pandas API still imports it."""
    got = child_json(PYARROW_AFTER_ENTRY)
    assert got == {"before": False, "frame": {"a": [1, 2], "b": ["x", "y"]}, "after": True}


COMPUTE_AFTER_ENTRY = """import inspect, json, sys
from recordsync.cli import startup
if sys.argv[1] == "pyarrow changed":  # the seam's stand-in no longer fits pyarrow
    def _changed(self, key):
        raise KeyError(key)
    startup._NoSections.__getitem__ = _changed
startup.leave_out_unused()
import textwrap
signature, dedent = inspect.signature, textwrap.dedent
import pyarrow as pa
import pyarrow.compute as pc
docs_imported = "pyarrow.vendored.docscrape" in sys.modules
from pyarrow.vendored import docscrape
text = pa.array([" a-", None])
json.dump({
    "by_keyword": pc.utf8_trim(text, characters=" -").to_pylist(),
    "by_options": pc.utf8_trim(text, options=pc.TrimOptions(" -")).to_pylist(),
    "regex": pc.match_substring_regex(pa.array(["ab", "x"]), pattern="^a").to_pylist(),
    "cast": pc.cast(pa.array(["1"]), pa.int64()).to_pylist(),
    "function_lists_options": "characters : " in pc.utf8_trim.__doc__
    or "characters" in str(inspect.signature(pc.utf8_trim)),
    "put_back": inspect.signature is signature and textwrap.dedent is dedent,
    "options_signature": str(inspect.signature(pc.TrimOptions)),
    "docs_imported": docs_imported,
    "docs_module": docscrape.NumpyDocString.__module__,
    # pyarrow's own use of its docs after the import (user-defined functions' docstrings)
    "options_docs_later": [p.name for p in pc._scrape_options_class_doc(pc.TrimOptions).params],
    "dedent_later": pc.dedent("  a\\n  b"),
}, sys.stdout)
"""


def compute_after_entry(case: str) -> dict[str, Any]:
    got: dict[str, Any] = child_json(COMPUTE_AFTER_ENTRY, case)
    return got


@pytest.mark.parametrize("case", ["as today", "pyarrow changed"])
def test_pyarrow_compute_imported_without_its_option_docs_works_as_before(case: str) -> None:
    """After the CLI's start-up (recordsync.cli.startup), pyarrow.compute is imported without
    parsing its options classes' docs and signatures: its functions take their options as
    before, their docstrings and signatures leave the options out, and what was replaced
    during the import is put back. Should pyarrow change so that the seam fails, the module
    is imported as it is (its functions then list their options)."""
    got = compute_after_entry(case)
    assert got["by_keyword"] == got["by_options"] == ["a", None]
    assert got["regex"] == [True, False] and got["cast"] == [1]
    assert got["put_back"] is True
    assert got["options_signature"] == "(characters)"
    assert got["function_lists_options"] is (case == "pyarrow changed")
    # pyarrow's numpydoc module (and pydoc) imported only when pyarrow.compute is not quiet
    assert got["docs_imported"] is (case == "pyarrow changed")
    assert got["docs_module"] == "pyarrow.vendored.docscrape"
    assert got["options_docs_later"] == ["characters"]
    assert got["dedent_later"] == "a\nb"


PLUGIN_LOADER_AFTER_ENTRY = """import json, sys
from recordsync.cli.startup import leave_out_unused
leave_out_unused()
from pydantic import BaseModel
class Model(BaseModel):
    a: int
from pydantic.plugin import _loader
before = "importlib.metadata" in sys.modules
found = _loader.entry_points(group="pydantic")
json.dump({"model": Model(a="1").a, "plugins": list(_loader.get_plugins()), "before": before,
           "found": type(found).__name__, "after": "importlib.metadata" in sys.modules},
          sys.stdout)
"""


def test_pydantics_plugin_loader_imports_importlib_metadata_only_when_asked() -> None:
    """With plugins off (the CLI's start-up), pydantic's plugin loader is imported without
    importlib.metadata; its ``entry_points`` imports it when called, and works."""
    env = child_env()
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    got = child_json(PLUGIN_LOADER_AFTER_ENTRY, env=env)
    assert got == {
        "model": 1,
        "plugins": [],
        "before": False,
        "found": "EntryPoints",
        "after": True,
    }


def test_the_environments_own_settings_are_left_as_they_are(tmp_path: Path) -> None:
    """``PYDANTIC_DISABLE_PLUGINS`` (here: none disabled) and ``OPENBLAS_NUM_THREADS`` set by
    the user are left as they are."""
    env = dict(os.environ, PYDANTIC_DISABLE_PLUGINS="", OPENBLAS_NUM_THREADS="2")
    got = run_into_a_service(tmp_path, env)
    assert got["code"] == 0 and got["plugins_looked_up"] is True
    assert got["blas_threads"] == "2"


IMPORTS_PROMOTED = """import gc, json, sys
from recordsync import tuning
from recordsync.cli.startup import importing, leave_out_unused
tuning.enable()
leave_out_unused()
full = gc.get_stats()[2]["collections"]
with importing():
    import recordsync.run.pipeline
    made = [recordsync.run.pipeline]  # a container made while the imports were in
    paused = not gc.isenabled()
oldest = any(o is made for o in gc.get_objects(generation=2))
young = len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1))
json.dump({"paused": paused, "gc": gc.isenabled(), "frozen": gc.get_freeze_count(),
           "full": gc.get_stats()[2]["collections"] - full, "oldest": oldest,
           "young": young, "tracked": len(gc.get_objects())}, sys.stdout)
"""


def test_the_command_lines_own_process_promotes_its_imports_without_a_collection() -> None:
    """In the command line's own process (``leave_out_unused`` called, as by ``entry``), the
    collector is paused while a command's modules import, then what they made is moved to
    the oldest generation without a full collection (that walk is left to the run's own
    first full collection, which a small run never makes), nothing stays frozen, and the
    collector runs again."""
    got = child_json(IMPORTS_PROMOTED)
    assert got["paused"] is True and got["gc"] is True
    assert got["full"] == 0
    assert got["frozen"] == 0
    assert got["oldest"] is True
    # the young generations hold only what was made after the block (the test's own lists)
    assert got["young"] < got["tracked"] // 100, got


def test_importing_pauses_the_collector_and_restores_it() -> None:
    """recordsync.cli.startup.importing: the GC off in the block when the ``gc_pause`` switch
    is on, what the block made moved to the oldest generation after it without a collection
    (unless ``promote=False``), nothing frozen, and the GC as it was (also after an error);
    objects someone else froze stay frozen; nothing changes with the switch off."""
    import gc

    from recordsync.cli.startup import importing
    from recordsync.tuning import Tuning, using

    def full() -> int:
        return int(gc.get_stats()[2]["collections"])

    def oldest(obj: object) -> bool:
        return any(o is obj for o in gc.get_objects(generation=2))

    assert gc.isenabled()
    with using(Tuning.all()):
        before = full()
        with importing():
            assert not gc.isenabled()
            made: list[object] = [object()]
        assert gc.isenabled() and full() == before and gc.get_freeze_count() == 0
        assert oldest(made)
        with importing(promote=False):
            assert not gc.isenabled()
            kept: list[object] = [object()]
        assert gc.isenabled() and full() == before and not oldest(kept)
        with pytest.raises(ImportError), importing():
            raise ImportError("a module that fails to import")
        assert gc.isenabled()
        gc.disable()
        try:
            with importing():
                assert not gc.isenabled()
            assert not gc.isenabled()  # off before: left off
        finally:
            gc.enable()
        frozen: list[object] = [object()]
        gc.freeze()  # someone else's frozen objects stay frozen
        try:
            parked = gc.get_freeze_count()
            with importing():
                pass
            assert gc.get_freeze_count() == parked and not oldest(frozen)
        finally:
            gc.unfreeze()
    with using(Tuning()), importing():
        assert gc.isenabled()

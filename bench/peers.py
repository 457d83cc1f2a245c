"""The peers the benchmarks run beside recordsync: drt-core and dlt, in their own environment.

Neither is a dependency of recordsync: :func:`peer_python` creates a virtual environment of
its own under the user's cache folder (``$XDG_CACHE_HOME/recordsync-bench/peers-<pins>``,
else ``~/.cache/...``; ``RECORDSYNC_BENCH_PEERS`` names another folder) and installs the
pinned versions there with pip, once; the environment's name carries a digest of the pins,
so a change of pin makes a new one.

Each peer posts ``{"objects": [...]}`` batches of at most 100 to
``URL/api/objects/contacts/batch``, read from one of two inputs:

- ``modelled`` (the default): a table holding, per row, the name, the e-mail and the
  ``fields`` object as JSON text, written by the benchmark from the very objects recordsync
  sends, as a warehouse model would hold them for a reverse-ETL tool. The same objects
  arrive from every side, so the service does the same work for each; the peers skip the
  mapping, normalising and checking recordsync does (which favours them).
- ``raw``: the contacts CSV recordsync reads; the peers send the name, ``match_by: email``
  and four fields (e-mail, phone, job title, lead score) unconverted. Less than recordsync
  sends: into the sandbox, which then stores less per record, a peer can beat even the bare
  loop, so this is no like-for-like comparison there.

- drt (``drt run`` of a generated project: a DuckDB ``read_csv`` model, the ``rest_api``
  destination with a ``body_mode: batch`` template and ``max_records_per_request: 100``).
  ``tuned``: ``sync.batch_size: 10000`` (drt hands the destination 10,000 rows at a time,
  one HTTP client each); ``natural``: ``batch_size: 100``, drt's default, one client (and one
  new connection) per request. Both without drt's default pacing (``rate_limit`` of 10
  requests a second: ``requests_per_second: 0``), as no other side is paced.
- dlt (``peer_dlt.py``: a ``@dlt.resource`` reading the CSV, a
  ``@dlt.destination(batch_size=100)`` posting each batch from one keep-alive
  ``httpx.Client``), dlt's normal extract, normalise and load steps in a fresh pipelines
  folder.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINS = ("drt-core[duckdb]>=1.2,<1.3", "dlt>=1.31,<2", "httpx>=0.27")
PEERS = ("drt-tuned", "dlt", "drt-natural")
BATCH = {"drt-tuned": 10_000, "drt-natural": 100}


def venv_dir() -> Path:
    named = os.environ.get("RECORDSYNC_BENCH_PEERS")
    if named:
        return Path(named)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256("\n".join(PINS).encode()).hexdigest()[:10]
    return cache / "recordsync-bench" / f"peers-{digest}"


def peer_python() -> Path:
    """The peers' interpreter; creates their environment and installs the pins on first use."""
    root = venv_dir()
    python = root / "bin" / "python"
    done = root / "installed.txt"
    if done.exists() and done.read_text(encoding="utf-8") == "\n".join(PINS):
        return python
    print(f"installing the peers ({', '.join(PINS)}) into {root} (once)", flush=True)
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--clear", str(root)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, *PINS], check=True)
    done.write_text("\n".join(PINS), encoding="utf-8")
    return python


def peer_env(base: dict[str, str], home: Path) -> dict[str, str]:
    """The peers' environment: no telemetry, their own home (drt's ``~/.drt``)."""
    env = {k: v for k, v in base.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        HOME=str(home), DO_NOT_TRACK="1", RUNTIME__DLTHUB_TELEMETRY="false", DRT_TELEMETRY="0"
    )
    return env


BATCH_TEMPLATE = """{"objects": [{% for r in rows %}{% if not loop.first %},{% endif %}
{"name": {{ (r.first ~ " " ~ r.last) | tojson }}, "match_by": "email",
"match_value": {{ r.email | tojson }}, "fields": {"email": {{ r.email | tojson }},
"phone": {{ r.phone | tojson }}, "job_title": {{ r.title | tojson }},
"lead_score": {{ r.score | tojson }}}}{% endfor %}]}"""


MODELLED_TEMPLATE = """{"objects": [{% for r in rows %}{% if not loop.first %},{% endif %}
{"name": {{ r.name | tojson }}, "match_by": "email", "match_value": {{ r.email | tojson }},
"fields": {{ r.fields }}}{% endfor %}]}"""
"""The modelled table's ``fields`` column is JSON text already: written as it is."""


def drt_project(
    root: Path, csv: Path, url: str, key: str, batch_size: int, table: str = "raw"
) -> Path:
    """A drt project posting the CSV's contacts to ``url``; returns its folder (the cwd of
    ``drt run``); its profile goes to ``root/home/.drt``."""
    project = root / "drt"
    (project / "syncs").mkdir(parents=True)
    home = root / "home"
    (home / ".drt").mkdir(parents=True)
    (home / ".drt" / "profiles.yml").write_text(
        "bench:\n  type: duckdb\n  database: ':memory:'\n", encoding="utf-8"
    )
    (project / "drt_project.yml").write_text("name: bench\nprofile: bench\n", encoding="utf-8")
    source = "read_csv('" + str(csv).replace("'", "''") + "', header=true, all_varchar=true)"
    if table == "modelled":
        model = f"SELECT name, email, fields FROM {source}"
        template = MODELLED_TEMPLATE.replace("\n", " ")
    else:
        model = (
            'SELECT "First Name" AS first, "Last Name" AS last, "Email" AS email,'
            ' "Phone" AS phone, "Title" AS title, TRY_CAST("Score" AS INTEGER) AS score'
            f" FROM {source}"
        )
        template = BATCH_TEMPLATE.replace("\n", " ")
    sync = (
        "name: contacts\n"
        f"model: {_yaml_str(model)}\n"
        "destination:\n"
        "  type: rest_api\n"
        f"  url: {_yaml_str(url + '/api/objects/contacts/batch')}\n"
        "  method: POST\n"
        "  headers:\n"
        "    Content-Type: application/json\n"
        f"    x-api-key: {_yaml_str(key)}\n"
        "  body_mode: batch\n"
        f"  batch_template: {_yaml_str(template)}\n"
        "  max_records_per_request: 100\n"
        "sync:\n"
        "  mode: full\n"
        f"  batch_size: {batch_size}\n"
        "  rate_limit:\n"
        "    requests_per_second: 0\n"  # drt's default is 10 a second: off, as for the others
        "  on_error: fail\n"
    )
    (project / "syncs" / "contacts.yml").write_text(sync, encoding="utf-8")
    return project


def _yaml_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def peer_command(
    peer: str, root: Path, csv: Path, url: str, key: str, table: str = "raw"
) -> tuple[list[str], Path, Path]:
    """(command, working folder, home) of one ``peer`` run into ``url``, in a fresh ``root``;
    ``csv`` is a ``table`` (``raw`` or ``modelled``, see the module docstring)."""
    python = peer_python()
    root.mkdir(parents=True)
    if peer in BATCH:
        project = drt_project(root, csv, url, key, BATCH[peer], table)
        drt = python.parent / "drt"
        return [str(drt), "run", "--quiet"], project, root / "home"
    if peer == "dlt":
        (root / "home").mkdir()
        cmd = [str(python), str(HERE / "peer_dlt.py"), url, key, str(csv), str(root / "dlt")]
        return [*cmd, table], root, root / "home"
    raise ValueError(f"unknown peer {peer!r}: one of {', '.join(PEERS)}")

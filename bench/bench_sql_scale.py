"""Query sources at scale: nightly runs from PostgreSQL and from DuckDB over Parquet into the
no-op server, with what arrived counted at the server.

    python bench/bench_sql_scale.py [--rows 1000000 [10000000]] [--sources postgres duckdb]
                                    [--phases dry first rerun changed] [--mapping-extra YAML]

For each size, the contacts of bench/project.py (the same columns and kinds of values, made
by SQL, with a key column ``rid``) are made by the databases themselves: a table in a
PostgreSQL server this script starts (initdb + pg_ctl on a temporary directory, a unix
socket only; tests/read/servers.py), and a Parquet file written by DuckDB. The mapping is
configs/contacts.yaml with its source replaced by ``SELECT * FROM contacts`` (key ``rid``),
or by ``SELECT * FROM 'contacts.parquet'`` on DuckDB. Each phase is a whole run
(``run_pipeline`` with the command line's process tweaks) in a fresh child process, which
reports its own peak RSS (VmHWM), wall and CPU time:

- ``dry``: a dry run, state store off (read, map, validate: what item "dry run" means);
- ``first``: the first nightly run (state store on, every row sent);
- ``rerun``: the same source again, nothing changed (nothing may arrive);
- ``changed``: after 1% of the rows got a new job title (every 100th ``rid``), a nightly run
  that must send exactly those rows.

Each source has its no-op server (bench/noop_server.py), its counts set back to zero before
each run: ``first`` must deliver each row once, ``rerun`` nothing, ``changed`` exactly the
changed rows (their e-mails checked one by one). A run that delivers anything else stops
the benchmark. ``--mapping-extra`` merges a YAML mapping fragment into the mapping (for
example an option of another change-detection mode), so that modes can be compared on the
same data.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests" / "read")]

from measure import vm_hwm_mb  # noqa: E402

PHASES = ("dry", "first", "rerun", "changed")
FIRST = ("Ada", "Ben", "Chloe", "Diego", "Ines", "Omar", "Rosa", "Sven", "Yusuf", "Greta")
LAST = ("Weber", "Costa", "Xu", "Brown", "Jensen", "Nakamura", "Fischer", "Varga")
EVERY = 100
"""Every 100th row changes between ``rerun`` and ``changed`` (1%)."""


def _pick(values: tuple[str, ...], expr: str) -> str:
    return "(ARRAY[" + ", ".join(f"'{v}'" for v in values) + f"])[{expr} % {len(values)} + 1]"


def contacts_sql(series: str, changed: bool) -> str:
    """The contacts as one SELECT over ``series`` (a relation of integers ``g``): the same
    text runs on PostgreSQL and DuckDB."""
    title = f"CASE WHEN g % {EVERY} = 0 THEN 'Changed ' || g ELSE 'Data Engineer' END"
    owners = ("ada@acme.example", "ben@acme.example", " Chloe@acme.example ", "DIEGO@ACME.EXAMPLE")
    return f"""
SELECT g AS rid, f AS "First Name", l AS "Last Name",
  lower(f) || '.' || lower(l) || g || '@bench.example' AS "Email",
  '+44 20 ' || (1000 + g % 9000) || ' ' || (1000 + (g * 7) % 9000) AS "Phone",
  {title if changed else "'Data Engineer'"} AS "Title",
  {_pick(("Lead", "qualified", "Customer", "churned", ""), "g")} AS "Stage",
  g % 101 AS "Score",
  {_pick(("yes", "no", ""), "g")} AS "Newsletter",
  lpad(CAST(g % 27 + 1 AS text), 2, '0') || '/0' || (g % 8 + 1) || '/2025' AS "Last Contacted",
  {_pick(("", "VIP", "Partner; Newsletter", "Churn risk"), "g")} AS "Tags",
  'bench.example' AS "Company Domain",
  {_pick(owners, "g")} AS "Owner",
  '2025-0' || (g % 8 + 1) || '-1' || (g % 9) || ' 10:30' AS "Signed Up"
FROM (SELECT g, {_pick(FIRST, "g")} AS f, {_pick(LAST, "g")} AS l FROM {series}) AS s"""


def changed_emails(n: int) -> set[str]:
    out = set()
    for g in range(EVERY, n + 1, EVERY):
        f, last = FIRST[g % len(FIRST)], LAST[g % len(LAST)]
        out.add(f"{f.lower()}.{last.lower()}{g}@bench.example")
    return out


def load_postgres(dsn: str, n: int) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS contacts")
        conn.execute(
            "CREATE TABLE contacts AS"
            + contacts_sql(f"generate_series(1, {n}) AS t(g)", changed=False)
        )
        conn.execute("ALTER TABLE contacts ADD PRIMARY KEY (rid)")
        conn.execute("VACUUM ANALYZE contacts")


def change_postgres(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            f"""UPDATE contacts SET "Title" = 'Changed ' || rid WHERE rid % {EVERY} = 0"""
        )
        conn.execute("VACUUM ANALYZE contacts")


def write_parquet(path: Path, n: int, changed: bool) -> None:
    import duckdb

    con = duckdb.connect()
    con.execute("SET preserve_insertion_order = true")
    tmp = path.with_suffix(".tmp")
    sql = contacts_sql(f"range(1, {n + 1}) AS t(g)", changed)
    con.execute(f"COPY ({sql}) TO '{tmp}' (FORMAT parquet)")
    con.close()
    tmp.replace(path)


def make_project(root: Path, source: str, extra: dict[str, Any]) -> Path:
    """A pipeline of one step: configs/contacts.yaml reading ``source`` as a query."""
    import shutil

    configs = root / "configs"
    configs.mkdir()
    mapping = yaml.safe_load((ROOT / "configs" / "contacts.yaml").read_text(encoding="utf-8"))
    if source == "postgres":
        mapping["source"] = {
            "query": "SELECT * FROM contacts", "key": "rid", "engine": "postgres",
            "dsn_env": "BENCH_PG_DSN", "name": "contacts",
        }
    else:
        mapping["source"] = {
            "query": "SELECT * FROM '../data/contacts.parquet'", "key": "rid", "name": "contacts"
        }
    mapping.update(extra)
    (configs / "contacts.yaml").write_text(yaml.safe_dump(mapping, sort_keys=False), "utf-8")
    shutil.copy(ROOT / "configs" / "owners.yaml", configs / "owners.yaml")
    pipelines = root / "pipelines"
    pipelines.mkdir()
    (pipelines / "bench.yaml").write_text(
        "name: bench\nsteps:\n  - ../configs/contacts.yaml\nsend:\n  chunk_size: 100\n"
        "  canary_chunk_size: 100\n",
        encoding="utf-8",
    )
    return pipelines / "bench.yaml"


def child(root: Path, phase: str, url: str) -> None:
    """Run one phase in this process and print a JSON line."""
    from recordsync.cli.startup import leave_out_unused

    leave_out_unused()  # as the command line does
    from project import KEY, warm_imports

    from recordsync.core.secret import Secret
    from recordsync.run.pipeline import RunRequest, run_pipeline
    from recordsync.run.target import Target
    from recordsync.tuning import Tuning

    warm_imports()
    start = vm_hwm_mb()
    t = time.perf_counter()
    c = time.process_time()
    result = run_pipeline(
        RunRequest(
            root / "pipelines" / "bench.yaml",
            dry_run=phase == "dry",
            state=phase != "dry",
            report_dir=root / "reports",
            state_db=root / "state.db",
            tuning=Tuning.all(),
        ),
        target=Target(url, Secret(KEY), "bench", "bench"),
    )
    wall = time.perf_counter() - t
    totals = result.summary["totals"]
    print(json.dumps({
        "peak_mb": round(vm_hwm_mb(), 1), "start_mb": round(start, 1), "wall": round(wall, 2),
        "cpu": round(time.process_time() - c, 2), "rows_read": totals["rows_read"],
        "exit": result.exit_code,
    }))


def run_phase(root: Path, phase: str, url: str, env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(root), phase, url],
        capture_output=True, text=True, env=env,
    )
    if out.returncode != 0:
        sys.exit(f"the {phase} run failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def check_arrivals(url: str, phase: str, n: int, who: str) -> str:
    """What the fresh no-op server received, against what ``phase`` must send."""
    import httpx
    from noop_server import counts

    got = counts(url)
    entries = got["entries"].get("contacts", 0)
    distinct = got["distinct"].get("contacts", 0)
    others = {k: v for k, v in got["entries"].items() if k != "contacts"}
    if phase == "first":
        ok = entries == distinct == n and not others
    elif phase in ("rerun", "dry"):
        ok = entries == 0 and not others
    else:
        want = changed_emails(n)
        ids = httpx.get(url + "/_counts", params={"identities": "1"}, timeout=600).json()
        arrived = {i.split(":", 1)[1] for i in ids["identities"].get("contacts", {})}
        ok = entries == distinct == len(want) and arrived == want and not others
    if not ok:
        sys.exit(f"{who}: the no-op server received {entries} entries ({distinct} distinct)"
                 f" and {others} elsewhere: not what a {phase} run of {n:,} rows must send")
    return f"{entries:,} arrived"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--sources", nargs="+", choices=("postgres", "duckdb"),
                    default=["postgres", "duckdb"])
    ap.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES))
    ap.add_argument("--mapping-extra", default="{}", help="YAML merged into the mapping")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1], args.child[2])
        return
    import httpx
    from noop_server import noop_server, write_meta
    from project import KEY
    from servers import postgres_server

    extra = yaml.safe_load(args.mapping_extra) or {}
    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="recordsync-sqlscale-") as tmp, ExitStack() as stack:
        base = Path(tmp)
        meta = write_meta(base / "meta.json")
        dsn = stack.enter_context(postgres_server()) if "postgres" in args.sources else ""
        env = dict(os.environ, BENCH_PG_DSN=dsn)
        for n in args.rows:
            for source in args.sources:
                root = base / f"{source}-{n}"
                (root / "data").mkdir(parents=True)
                t = time.perf_counter()
                if source == "postgres":
                    load_postgres(dsn, n)
                else:
                    write_parquet(root / "data" / "contacts.parquet", n, changed=False)
                print(f"{source}: {n:,} rows made in {time.perf_counter() - t:.1f} s", flush=True)
                make_project(root, source, extra)
                phases = [p for p in PHASES if p in args.phases]
                if "first" not in phases and {"rerun", "changed"} & set(phases):
                    phases.insert(phases.index("rerun" if "rerun" in phases else "changed"),
                                  "first")
                # one server for the source's runs (the state knows the target by its URL),
                # its counts reset before each run
                url = stack.enter_context(noop_server(meta, KEY))
                for phase in phases:
                    if phase == "changed":
                        if source == "postgres":
                            change_postgres(dsn)
                        else:
                            write_parquet(root / "data" / "contacts.parquet", n, changed=True)
                    httpx.delete(url + "/_counts", timeout=60).raise_for_status()
                    got = run_phase(root, phase, url, env)
                    arrived = check_arrivals(url, phase, n, f"{source} {phase} {n:,}")
                    got |= {"source": source, "rows": n, "phase": phase,
                            "load": round(os.getloadavg()[0], 2)}
                    results.append(got)
                    print(
                        f"{source:8} {n:>11,} rows {phase:8} {got['wall']:8.1f} s"
                        f" {n / got['wall']:>10,.0f} rows/s  CPU {got['cpu']:7.1f} s"
                        f"  peak RSS {got['peak_mb']:6.0f} MB  exit {got['exit']}  {arrived}"
                        f"  load {got['load']:.2f}",
                        flush=True,
                    )
    for source in args.sources:
        for phase in args.phases:
            peaks = [r["peak_mb"] for r in results if r["source"] == source
                     and r["phase"] == phase]
            if len(peaks) > 1:
                print(f"{source} {phase}: peak RSS {args.rows[-1]:,} / {args.rows[0]:,} rows:"
                      f" {peaks[-1] / peaks[0]:.2f}x (target: <= 300 MB, flat)")
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "results_sql_scale.json").write_text(json.dumps(results, indent=2))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()

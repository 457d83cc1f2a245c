"""Query sources at scale: nightly runs from PostgreSQL and from DuckDB over Parquet into the
no-op server, with what arrived counted at the server.

    python bench/bench_sql_scale.py [--rows 1000000 [10000000]] [--sources postgres duckdb]
                                    [--phases dry first rerun changed] [--mapping-extra YAML]
    python bench/bench_sql_scale.py --pushdown [--pairs 2] [--client-changed] [--switch-back]
                                    [--rows ...] [--sources ...]

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

``--pushdown`` compares, on the same table, change detection in the database
(``change_detection: database``) with today's full-read path (the client's digests):

- ``first``: the first run with change detection in the database (state A): every row sent
  once, the database's table of synced rows filled;
- state A is copied to state B (its store and snapshot files), and B's step switched to the
  client's change detection. One state holds one snapshot a step, for the mode that wrote it:
  switching modes on one state makes the next run a full pass (nothing is sent again, the
  ledger finds every row unchanged), and switching back does the same on the database's side.
  Two states let each mode keep its own snapshot;
- ``switch``: B's first run in the client's mode (no snapshot of that mode: every row read,
  mapped and checked against the ledger; nothing may arrive);
- ``--pairs`` times, interleaved: ``rerun-client`` (B) and ``rerun-pushdown`` (A), the
  unchanged re-runs (nothing may arrive); their median walls give the ratio (target >= 4x);
- 1% of the rows change; ``changed-pushdown`` (A), and with ``--client-changed``
  ``changed-client`` (B): exactly the changed rows must arrive;
- ``--switch-back``: B's step back in the database's mode (its snapshot is the client's: a
  full pass; nothing may arrive).

``BENCH_HOLD=<path>``: before each run, while that file exists, the benchmark waits (a 10M
first run takes an hour: create the file, let the first run end, put another version of the
code in place, remove the file; every run prints the commit it ran).

Besides the child's wall, CPU and peak RSS, each run prints the PostgreSQL server's CPU
(the postmaster's own and its reaped backends' and parallel workers': the diff runs there);
the server's version and its parallel-worker settings are printed first.
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


def made(base: Path, source: str, n: int, dsn: str) -> Path:
    """A size's source: ``n`` rows loaded into the PostgreSQL table or written as the Parquet
    file; the size's project folder (made here, with its ``data`` folder)."""
    root = base / f"{source}-{n}"
    (root / "data").mkdir(parents=True)
    t = time.perf_counter()
    if source == "postgres":
        load_postgres(dsn, n)
    else:
        write_parquet(root / "data" / "contacts.parquet", n, changed=False)
    print(f"{source}: {n:,} rows made in {time.perf_counter() - t:.1f} s", flush=True)
    return root


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


def make_project(
    root: Path, source: str, extra: dict[str, Any], suffix: str = ""
) -> Path:
    """A pipeline of one step: configs<suffix>/contacts.yaml reading ``source`` as a query
    (pipeline ``pipelines<suffix>/bench.yaml``; every suffix's pipeline is named ``bench``
    and its step ``contacts``: the same scope in a state store)."""
    import shutil

    configs = root / f"configs{suffix}"
    configs.mkdir()
    mapping = yaml.safe_load((ROOT / "configs" / "contacts.yaml").read_text(encoding="utf-8"))
    if source == "postgres":
        mapping["source"] = {
            "query": "SELECT * FROM contacts", "key": "rid", "engine": "postgres",
            "dsn_env": "BENCH_PG_DSN", "name": "contacts",
        }
    else:
        mapping["source"] = {
            "query": f"SELECT * FROM '{(root / 'data' / 'contacts.parquet').as_posix()}'",
            "key": "rid", "name": "contacts",
        }
    mapping.update(extra)
    (configs / "contacts.yaml").write_text(yaml.safe_dump(mapping, sort_keys=False), "utf-8")
    shutil.copy(ROOT / "configs" / "owners.yaml", configs / "owners.yaml")
    pipelines = root / f"pipelines{suffix}"
    pipelines.mkdir()
    (pipelines / "bench.yaml").write_text(
        f"name: bench\nsteps:\n  - ../configs{suffix}/contacts.yaml\nsend:\n"
        "  chunk_size: 100\n"
        "  canary_chunk_size: 100\n",
        encoding="utf-8",
    )
    return pipelines / "bench.yaml"


def child(root: Path, phase: str, url: str, pipeline: Path, state: Path) -> None:
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
    profile = None
    if phase in os.environ.get("BENCH_PROFILE", "").split(","):  # where the run's time goes
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    result = run_pipeline(
        RunRequest(
            pipeline,
            dry_run=phase == "dry",
            state=phase != "dry",
            report_dir=root / "reports",
            state_db=state,
            tuning=Tuning.all(),
        ),
        target=Target(url, Secret(KEY), "bench", "bench"),
    )
    wall = time.perf_counter() - t
    if profile is not None:
        import pstats

        profile.disable()
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    totals = result.summary["totals"]
    print(json.dumps({
        "peak_mb": round(vm_hwm_mb(), 1), "start_mb": round(start, 1), "wall": round(wall, 2),
        "cpu": round(time.process_time() - c, 2), "rows_read": totals["rows_read"],
        "exit": result.exit_code, "warnings": result.summary.get("warnings", []),
        "totals": {k: v for k, v in totals.items() if isinstance(v, int) and v},
        # the no-op server stores nothing: a read-back finds nothing (exit 1 alone)
        "reason": {
            k: v for k, v in {
                "verify_failed": (result.summary.get("verify") or {}).get("failed"),
                "guards": result.summary.get("guards"),
            }.items() if v
        },
    }))


def server_cpu(dsn: str) -> float:
    """The PostgreSQL server's CPU seconds so far: the postmaster's own and its reaped
    children's (every backend of a closed connection); 0.0 without a server."""
    import psutil

    if not dsn:
        return 0.0
    host = dsn.split("host=", 1)[1].split("&", 1)[0]
    pid = int((Path(host) / "data" / "postmaster.pid").read_text().split()[0])
    t = psutil.Process(pid).cpu_times()
    return float(t.user + t.system + t.children_user + t.children_system)


def server_settings(dsn: str) -> str:
    """The PostgreSQL server's version and the settings that decide how many parallel
    workers the database's diff may take."""
    import psycopg

    names = ("max_parallel_workers_per_gather", "max_parallel_workers", "work_mem")
    with psycopg.connect(dsn, autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        shown = [f"{n} {conn.execute(f'SHOW {n}').fetchone()[0]}" for n in names]
    return f"PostgreSQL {version[0] if version else '?'}: " + ", ".join(shown)


def hold() -> None:
    """Wait while the file named by ``BENCH_HOLD`` exists (the module's docstring)."""
    path = os.environ.get("BENCH_HOLD")
    if path and Path(path).exists():
        print(f"holding: waiting for {path} to go", flush=True)
        while Path(path).exists():
            time.sleep(5)


def commit() -> str:
    """The commit of the code the runs import (``PYTHONPATH``'s checkout, else this one's)."""
    import recordsync

    out = subprocess.run(
        ["git", "-C", str(Path(recordsync.__file__).parent), "describe", "--always", "--dirty"],
        capture_output=True, text=True,
    )
    return out.stdout.strip() or "?"


def run_phase(
    root: Path, phase: str, url: str, env: dict[str, str],
    pipeline: Path | None = None, state: Path | None = None,
) -> dict[str, Any]:
    hold()
    code = commit()
    pipeline = pipeline or root / "pipelines" / "bench.yaml"
    state = state or root / "state.db"
    dsn = env.get("BENCH_PG_DSN", "")
    before = server_cpu(dsn)
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(root), phase, url, str(pipeline), str(state)],
        capture_output=True, text=True, env=env,
    )
    if out.returncode != 0:
        sys.exit(f"the {phase} run failed:\n{out.stderr[-4000:]}")
    if phase in os.environ.get("BENCH_PROFILE", "").split(","):
        print(out.stderr[-12000:], file=sys.stderr)
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    time.sleep(0.5)  # the backends reaped
    got["server_cpu"] = round(server_cpu(dsn) - before, 2)
    got["commit"] = code
    return got


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
    elif phase in ("rerun", "dry", "switch", "back") or phase.startswith("rerun-"):
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


def show(got: dict[str, Any], arrived: str) -> None:
    n = got["rows"]
    print(
        f"{got['source']:8} {n:>11,} rows {got['phase']:16} {got['wall']:8.1f} s"
        f" {n / got['wall']:>10,.0f} rows/s  CPU {got['cpu']:7.1f} s"
        f" (server {got['server_cpu']:6.1f} s)  peak RSS {got['peak_mb']:6.0f} MB"
        f"  exit {got['exit']}  {arrived}  load {got['load']:.2f}",
        flush=True,
    )
    print(f"    code {got.get('commit')}; totals: {got.get('totals')}; {got.get('reason') or ''}",
          flush=True)
    for w in got.get("warnings", []):
        print(f"    warning: {w}", flush=True)


def compare(args: argparse.Namespace) -> None:
    """``--pushdown``: the module's docstring."""
    import shutil
    import statistics

    import httpx
    from noop_server import noop_server, write_meta
    from project import KEY
    from servers import postgres_server

    extra = yaml.safe_load(args.mapping_extra) or {}
    print("load average (1/5/15 min):", "/".join(f"{x:.2f}" for x in os.getloadavg()))
    results: list[dict[str, Any]] = []
    verdicts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="recordsync-sqlscale-") as tmp, ExitStack() as stack:
        base = Path(tmp)
        meta = write_meta(base / "meta.json")
        dsn = stack.enter_context(postgres_server()) if "postgres" in args.sources else ""
        if dsn:
            print(server_settings(dsn), flush=True)
        env = dict(os.environ, BENCH_PG_DSN=dsn)
        for n in args.rows:
            for source in args.sources:
                root = made(base, source, n, dsn)
                pushed = make_project(root, source, extra)
                make_project(root, source, extra, "-client")  # the client's: as it was
                pd_map = root / "configs" / "contacts.yaml"
                mapping = yaml.safe_load(pd_map.read_text(encoding="utf-8"))
                mapping["source"]["change_detection"] = "database"
                pd_map.write_text(yaml.safe_dump(mapping, sort_keys=False), "utf-8")
                client = root / "pipelines-client" / "bench.yaml"
                state_a = root / "a" / "state.db"
                state_b = root / "b" / "state.db"
                state_a.parent.mkdir()
                url = stack.enter_context(noop_server(meta, KEY))

                def one(
                    phase: str, pipeline: Path, state: Path, kind: str,
                    root: Path = root, url: str = url, n: int = n, source: str = source,
                ) -> dict[str, Any]:
                    httpx.delete(url + "/_counts", timeout=60).raise_for_status()
                    got = run_phase(root, phase, url, env, pipeline, state)
                    arrived = check_arrivals(url, kind, n, f"{source} {phase} {n:,}")
                    got |= {"source": source, "rows": n, "phase": phase, "arrived": arrived,
                            "load": round(os.getloadavg()[0], 2)}
                    results.append(got)
                    show(got, arrived)
                    return got

                one("first", pushed, state_a, "first")
                if not args.no_client:
                    shutil.copytree(state_a.parent, state_b.parent)
                    one("switch", client, state_b, "rerun")
                walls: dict[str, list[float]] = {"client": [], "pushdown": []}
                for _ in range(args.pairs):
                    if not args.no_client:
                        walls["client"].append(
                            one("rerun-client", client, state_b, "rerun")["wall"]
                        )
                    walls["pushdown"].append(
                        one("rerun-pushdown", pushed, state_a, "rerun")["wall"]
                    )
                if source == "postgres":
                    change_postgres(dsn)
                else:
                    write_parquet(root / "data" / "contacts.parquet", n, changed=True)
                one("changed-pushdown", pushed, state_a, "changed")
                if args.client_changed:
                    one("changed-client", client, state_b, "changed")
                if args.switch_back:
                    one("back", pushed, state_b, "rerun")
                if args.no_client:
                    continue
                ratio = statistics.median(walls["client"]) / statistics.median(walls["pushdown"])
                verdict = (
                    f"{source} {n:,} rows: unchanged re-run, full-read path"
                    f" {statistics.median(walls['client']):.1f} s / in the database"
                    f" {statistics.median(walls['pushdown']):.1f} s (medians of"
                    f" {args.pairs}): {ratio:.2f}x (target >= 4x: "
                    f"{'met' if ratio >= 4 else 'missed'})"
                )
                print(verdict, flush=True)
                verdicts.append(verdict)
    for v in verdicts:
        print(v)
    for source in args.sources:
        for phase in ("first", "rerun-pushdown", "changed-pushdown"):
            peaks = [r["peak_mb"] for r in results if r["source"] == source
                     and r["phase"] == phase]
            if len(args.rows) > 1 and peaks:
                print(f"{source} {phase}: peak RSS {max(peaks):.0f} MB at most"
                      f" (target: <= 300 MB, flat from {args.rows[0]:,} to {args.rows[-1]:,})")
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "results_sql_scale_pushdown.json").write_text(json.dumps(results, indent=2))
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--sources", nargs="+", choices=("postgres", "duckdb"),
                    default=["postgres", "duckdb"])
    ap.add_argument("--phases", nargs="+", choices=PHASES, default=list(PHASES))
    ap.add_argument("--mapping-extra", default="{}", help="YAML merged into the mapping")
    ap.add_argument("--pushdown", action="store_true",
                    help="compare change_detection: database with the full-read path")
    ap.add_argument("--pairs", type=int, default=2,
                    help="--pushdown: interleaved pairs of unchanged re-runs")
    ap.add_argument("--client-changed", action="store_true",
                    help="--pushdown: the 1%% run by the full-read path too")
    ap.add_argument("--no-client", action="store_true",
                    help="--pushdown: the database's mode alone (no state B, no ratio)")
    ap.add_argument("--switch-back", action="store_true",
                    help="--pushdown: state B back in the database's mode at the end")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        c = args.child
        child(Path(c[0]), c[1], c[2], Path(c[3]), Path(c[4]))
        return
    if args.pushdown:
        compare(args)
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
                root = made(base, source, n, dsn)
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
                    show(got, arrived)
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

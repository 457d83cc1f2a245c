"""``recordsync run`` (and ``--dry-run``), ``retry`` and ``report``."""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import click

from recordsync.cli.options import (
    sandbox_seed_option,
    state_db_option,
    wait_for_lock_option,
)
from recordsync.cli.startup import importing
from recordsync.core.errors import EXIT_OK, ConfigError, RecordsyncError
from recordsync.state.location import StateLocation

_HTTP_STACK = "httpcore"
"""What httpx imports when a run makes its first client (its transport, h11): imported with
the command's own modules, while the collector is paused and start-up's compiled texts and
patterns are cached (:mod:`recordsync.cli.code_cache`)."""


def _progress(quiet: bool) -> tuple[Any, contextlib.AbstractContextManager[Any]]:
    from recordsync.report.progress import PlainProgress, RichProgress
    from recordsync.run.runner import NullProgress

    if quiet:
        return NullProgress(), contextlib.nullcontext()
    if sys.stderr.isatty() and sys.stdout.isatty():
        rich = RichProgress()
        return rich, rich
    return PlainProgress(), contextlib.nullcontext()


def _finish(result: Any, quiet: bool) -> None:
    """Print a short summary of the report (unless quiet; report.md holds it all), then, last,
    the verdict with the report's path; exit with the run's code."""
    from recordsync.report.console import render_console, verdict

    if not quiet:
        click.echo(render_console(result.summary, result.tallies, result.report_dir))
    for warning in result.summary.get("warnings") or []:
        click.echo(f"warning: {warning}", err=True)
    if result.error is not None:
        click.echo(f"error: {result.error}", err=True)
    click.echo(f"report: {result.report_dir}", err=True)  # for scripts: the run's directory
    stopped = result.error is not None
    click.echo(verdict(result.summary, result.report_dir, stopped=stopped), err=True)
    code = result.exit_code
    if code != EXIT_OK:
        sys.exit(code)


@contextlib.contextmanager
def _interrupted(request: Any) -> Iterator[None]:
    """Ctrl-C during a run: say where its report is (or that none was written) and what the
    next run does, then exit 130 (as a shell does for SIGINT)."""
    from recordsync.run.runner import Interrupted

    try:
        yield
    except Interrupted as exc:
        where = (
            f"no report was written; what it did so far is in {exc.report_dir / 'results.csv'}"
        )
        _stop_line(f"interrupted: {where}", request)
    except KeyboardInterrupt:
        _stop_line("interrupted before the run wrote its report: no report was written", request)


def _stop_line(said: str, request: Any) -> NoReturn:
    if request.dry_run:
        then = "nothing was sent; run it again for the whole report"
    elif request.state:
        then = (
            "run it again: the next run resumes this one (chunks the service acknowledged are"
            " not sent again)"
        )
    else:
        then = "run it again: without the state store (--no-state) it sends every row again"
    click.echo(f"{said}. {then[0].upper()}{then[1:]}.", err=True)
    sys.exit(130)


def _announce(quiet: bool) -> Any:
    def on_target(target: Any) -> None:
        if target.embedded:
            from recordsync.run.target import NO_TARGET

            chosen = target.chosen_by != NO_TARGET  # e.g. the pipeline's `target: sandbox`
            lead = "using" if chosen else f"{NO_TARGET}: using"
            why = f" (from {target.chosen_by})" if chosen else ""
            click.echo(
                f"{lead} the embedded sandbox ({target.sandbox_db}) on {target.base_url}"
                f"{why}; set RECORDSYNC_BASE_URL or --profile for a real service",
                err=True,
            )
        elif not quiet:
            click.echo(f"target: {target.base_url} (from {target.origin})", err=True)

    return on_target


@click.command("run")
@click.argument("pipeline", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--dry-run", is_flag=True, help="Read, map and validate; send nothing.")
@click.option("--base-url", help="Record service base URL (key from RECORDSYNC_API_KEY).")
@click.option("--profile", help="Target profile from configs/profiles.yaml.")
@click.option(
    "--report-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where reports/<run_id>/ go (default: the pipeline's report.directory).",
)
@click.option("--chunk-size", type=click.IntRange(1, 100), help="Rows per batch (max 100).")
@click.option("--canary-size", type=click.IntRange(1, 100), help="Size of each step's first chunk.")
@click.option(
    "--max-failure-rate",
    type=click.FloatRange(0, 1, min_open=True),
    help="Stop the run when more than this share of sent rows fail.",
)
@click.option("--max-creates", type=click.IntRange(0), help="Stop the run after this many creates.")
@click.option("--full-refresh", is_flag=True, help="Send every valid row, changed or not.")
@click.option(
    "--list-unchanged",
    is_flag=True,
    default=None,
    help="List unchanged rows in results.csv too (default: counted only; or the pipeline's"
    " report.list_unchanged).",
)
@click.option("--no-state", is_flag=True, help="Do not use the state store (send every row).")
@state_db_option
@click.option(
    "--allow-mass-deletes",
    is_flag=True,
    help="Mirror deletes: lift the mappings' max_count / max_share limits for this run.",
)
@click.option(
    "--durable-state",
    is_flag=True,
    help="fsync the state journal on every commit (survives a power cut, not only a kill).",
)
@click.option(
    "--allow-recreate",
    is_flag=True,
    help="Run even when a step keyed only by the state store's ledger finds its ledger empty"
    " while the target holds records of its type (creates every row again).",
)
@click.option(
    "--adopt-state",
    is_flag=True,
    help="Bind state written by a recordsync that did not record targets to this run's target"
    " (only if that state was made by runs into this target).",
)
@click.option(
    "--verify/--no-verify",
    default=None,
    help="Read back a sample of each step's records and compare them with what was sent"
    " (default: as the pipeline's and mappings' verify: say; on, 10 records a step).",
)
@wait_for_lock_option
@sandbox_seed_option
@click.option("--quiet", "-q", is_flag=True, help="No progress and no printed report.")
def run_command(
    pipeline: Path,
    dry_run: bool,
    base_url: str | None,
    profile: str | None,
    report_dir: Path | None,
    chunk_size: int | None,
    canary_size: int | None,
    max_failure_rate: float | None,
    max_creates: int | None,
    full_refresh: bool,
    list_unchanged: bool | None,
    no_state: bool,
    state_db: StateLocation | None,
    allow_mass_deletes: bool,
    durable_state: bool,
    allow_recreate: bool,
    adopt_state: bool,
    verify: bool | None,
    wait_for_lock: float,
    sandbox_seed: Path | None,
    quiet: bool,
) -> None:
    """Run PIPELINE: send every step's rows in chunks and write reports/<run_id>/.

    PIPELINE may also be a mapping file: it runs as a one-step pipeline named after the file.

    With the state store (default) only new, changed and previously failed rows are sent, a
    killed or interrupted run is resumed by the next one, and a run started while another run
    of the same pipeline is still going is refused, as is a concurrent run of another pipeline
    writing the same records through the same key (--wait-for-lock waits instead). The state
    is kept per target: a target it has never seen gets a first run.

    Exit codes: 0 all rows ok; 1 failed, invalid or in-doubt rows; 2 configuration error,
    nothing sent; 3 aborted (authentication, unknown object type, circuit breaker,
    mirror-delete limit, pipeline already running, an error found after a send); 130
    interrupted (Ctrl-C: the next run resumes it).
    """
    with importing():
        from recordsync.run.pipeline import RunRequest, run_pipeline
        from recordsync.run.target import sandbox_db_for

        importlib.import_module(_HTTP_STACK)

    if not pipeline.is_file():
        raise click.BadParameter(f"{pipeline} does not exist", param_hint="PIPELINE")
    request = RunRequest(
        pipeline,
        dry_run=dry_run,
        base_url=base_url,
        profile=profile,
        report_dir=report_dir,
        chunk_size=chunk_size,
        canary_size=canary_size,
        max_failure_rate=max_failure_rate,
        max_creates=max_creates,
        state=not no_state,
        state_db=state_db,
        full_refresh=full_refresh,
        list_unchanged=list_unchanged,
        allow_mass_deletes=allow_mass_deletes,
        durable_state=durable_state,
        allow_recreate=allow_recreate,
        adopt_state=adopt_state,
        verify=verify,
        wait_for_lock=wait_for_lock,
        sandbox_db=sandbox_db_for(sandbox_seed),
        sandbox_seed=sandbox_seed,
    )
    progress, ctx = _progress(quiet)
    with _interrupted(request), ctx:
        result = run_pipeline(request, progress=progress, on_target=_announce(quiet))
    _finish(result, quiet)


@click.command("retry")
@click.argument("report_dir", type=click.Path(file_okay=False, exists=True, path_type=Path))
@click.option("--base-url", help="Record service base URL (key from RECORDSYNC_API_KEY).")
@click.option("--profile", help="Target profile from configs/profiles.yaml.")
@click.option(
    "--report-dir",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the new report goes (default: next to REPORT_DIR).",
)
@click.option(
    "--resend-in-doubt",
    is_flag=True,
    help="Send in-doubt rows as they are, even where that may create a duplicate.",
)
@state_db_option
@click.option(
    "--allow-recreate",
    is_flag=True,
    help="As for run: go on although a ledger-only step's ledger is empty.",
)
@wait_for_lock_option
@click.option("--quiet", "-q", is_flag=True, help="No progress and no printed report.")
def retry_command(
    report_dir: Path,
    base_url: str | None,
    profile: str | None,
    out_dir: Path | None,
    resend_in_doubt: bool,
    state_db: StateLocation | None,
    allow_recreate: bool,
    wait_for_lock: float,
    quiet: bool,
) -> None:
    """Resend the failed and in-doubt rows of the run in REPORT_DIR (from its failures.csv).

    Exit 0 with a message when there is nothing to resend (invalid rows are not resent).
    """
    with importing():
        from recordsync.run.pipeline import RunRequest
        from recordsync.run.retry import nothing_to_retry, read_summary, retry_report

        importlib.import_module(_HTTP_STACK)

    summary = read_summary(report_dir)
    nothing = nothing_to_retry(report_dir)
    if nothing is not None:  # not an error: `run && retry` in cron must not fail on it
        click.echo(nothing, err=True)
        return
    request = RunRequest(
        Path(summary.get("pipeline_file") or "."),
        base_url=base_url,
        profile=profile,
        report_dir=out_dir or report_dir.parent,
        state_db=state_db,
        allow_recreate=allow_recreate,
        wait_for_lock=wait_for_lock,
    )
    progress, ctx = _progress(quiet)
    with _interrupted(request), ctx:
        result = retry_report(
            report_dir,
            request,
            resend_in_doubt=resend_in_doubt,
            progress=progress,
            on_target=_announce(quiet),
        )
    _finish(result, quiet)


DEFAULT_REPORTS = Path("reports")
"""Where runs write their reports unless told otherwise (a pipeline's report.directory)."""


def _latest_run(root: Path) -> Path:
    """``root`` itself when it holds a run's report, else its newest run's directory (by the
    time summary.json was written)."""
    if (root / "summary.json").is_file():
        return root
    runs = [p.parent for p in root.glob("*/summary.json")] if root.is_dir() else []
    if not runs:
        where = "no reports directory" if not root.is_dir() else "no run's report"
        raise ConfigError(
            f"{where} in {root.resolve()}",
            hint="give the run's directory (recordsync report reports/<run_id>), or run this"
            " where the pipeline's reports are written",
        )
    return max(runs, key=lambda p: ((p / "summary.json").stat().st_mtime_ns, p.name))


@click.command("report")
@click.argument(
    "report_dir", required=False, type=click.Path(file_okay=False, exists=True, path_type=Path)
)
@click.option("--json", "as_json", is_flag=True, help="Print summary.json instead.")
@click.option(
    "--open", "open_html", is_flag=True, help="Open report.html in the web browser instead."
)
def report_command(report_dir: Path | None, as_json: bool, open_html: bool) -> None:
    """Print the summary and grouped failures of the run in REPORT_DIR.

    With no REPORT_DIR: the latest run under ./reports (the default report directory); a
    directory of runs (a pipeline's report.directory) stands for its latest run too."""
    from recordsync.run.retry import read_summary

    given, report_dir = report_dir, _latest_run(report_dir or DEFAULT_REPORTS)
    if report_dir != given:  # say which run was taken
        click.echo(f"latest run: {report_dir}", err=True)
    summary = read_summary(report_dir)
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    if open_html:
        _open_html(report_dir)
        return
    md = report_dir / "report.md"
    if not md.is_file():
        raise RecordsyncError(f"{md} is missing", hint="the run may have crashed; see results.csv")
    click.echo(md.read_text(encoding="utf-8"))


def _open_html(report_dir: Path) -> None:
    """Open report.html with :func:`webbrowser.open` (the system's browser)."""
    import webbrowser

    page = report_dir / "report.html"
    if not page.is_file():
        raise RecordsyncError(
            f"{page} is missing",
            hint="reports written before report.html existed have report.md only: run"
            f" `recordsync report {report_dir}` to print it",
        )
    uri = page.resolve().as_uri()
    if not webbrowser.open(uri):
        raise ConfigError(
            f"no web browser could be started to open {page}",
            hint=f"open {uri} in a browser yourself (or set the BROWSER environment variable)",
        )
    click.echo(f"opened {page}", err=True)


COMMANDS: list[click.Command] = [run_command, retry_command, report_command]

"""The ``recordsync`` command line: a thin layer over the library.

Each sub-module defines its commands and is registered here. Errors become exit codes in
exactly one place, :func:`main` (see :func:`recordsync.core.errors.exit_code_for`).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
import traceback

import click

from recordsync import tuning
from recordsync.cli.startup import compiled_texts_done, importing, leave_out_unused
from recordsync.core.errors import RecordsyncError, exit_code_for
from recordsync.core.version import __version__


class _LazyGroup(click.Group):
    """Imports a command's module when that command is looked up (``recordsync run`` does
    not import the sandbox server, the inference engine or the schema checker's commands)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMAND_MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMAND_MODULES:
            with importing(promote=False):  # run and retry promote after their imports
                module = importlib.import_module(f"recordsync.cli.{COMMAND_MODULES[cmd_name]}")
            for command in module.COMMANDS:
                self.add_command(command)
        return super().get_command(ctx, cmd_name)


# command name -> the module (of recordsync.cli) whose COMMANDS hold it
COMMAND_MODULES = {
    "sandbox": "sandbox_cmds",
    "validate": "validate_cmds",
    "run": "run_cmds",
    "retry": "run_cmds",
    "report": "run_cmds",
    "state": "state_cmds",
    "history": "history_cmds",
    "init": "init_cmds",
    "import": "init_cmds",
}


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="recordsync")
def cli() -> None:
    """Sync CSV and Parquet exports into a CRM record service (batch upserts).

    With no target configured, commands run against the embedded local sandbox.
    """


def entry() -> None:
    """The console script and ``python -m recordsync``: :func:`main`, then an exit that skips
    the interpreter's teardown.

    By then the command has closed its files, state store, servers and temporary folders (all
    context-managed). What the teardown would still do is destroy native thread pools
    (pyarrow's, DuckDB's), and a worker still alive then makes the C++ runtime abort the
    process ("terminate called without an active exception", SIGABRT): seen once in about ten
    loaded full-suite runs, after a dry run had written its report. A scheduler would read
    that as exit 134 instead of the run's own code, so the code is handed to ``os._exit``
    after the output is flushed.

    Before the command: :func:`recordsync.cli.startup.leave_out_unused` (pandas, which
    pyarrow would import on its first conversion of a Python value, httpx's command line,
    pydantic's plugins, the texts the standard library compiles at run time, cached on disk;
    only here, where the whole process is recordsync's)."""
    leave_out_unused()
    code: int
    try:
        main()
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:  # sys.exit("message"): printed, exit 1, as Python does
            print(exc.code, file=sys.stderr)
            code = 1
    compiled_texts_done()  # a command with no imports of its own: the cache written now
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def main(argv: list[str] | None = None) -> None:
    """Run one command and exit with its code (``SystemExit``); tests call it in-process.

    The command line's process is recordsync's own: every tweak of :mod:`recordsync.tuning`
    is turned on (a library user gets none unless it asks)."""
    tuning.enable()
    try:
        cli.main(args=argv, prog_name="recordsync", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:  # usage errors
        exc.show()
        sys.exit(2)
    except RecordsyncError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exit_code_for(exc))
    except SystemExit:
        raise
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug or an unforeseen system failure: never exit 1 ("rows")
        click.echo(f"error: {_unexpected(exc)}", err=True)
        if os.environ.get("RECORDSYNC_DEBUG"):
            traceback.print_exc()
        sys.exit(exit_code_for(exc))
    else:
        sys.exit(0)


def _unexpected(exc: Exception) -> str:
    """One line for an error recordsync did not name: what failed, on which file, what next."""
    if isinstance(exc, OSError):
        where = f" on {exc.filename}" if exc.filename else ""
        what = f"{exc.strerror or exc}{where}"
    else:
        what = f"unexpected {type(exc).__name__}: {exc}"
    return (
        f"{what}; the command stopped (anything already sent is in the state journal and the"
        " report). If this is not a full disk or a permission problem, it is a recordsync bug:"
        " run again with RECORDSYNC_DEBUG=1 for the traceback and report it"
    )

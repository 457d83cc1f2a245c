"""``recordsync sandbox``: start the local record service (owned by the sandbox work)."""

from __future__ import annotations

from pathlib import Path

import click

from recordsync.core.secret import Secret


@click.command("sandbox")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8765, show_default=True, type=int, help="Port to listen on.")
@click.option(
    "--db",
    "db_path",
    default=".recordsync/sandbox.db",
    show_default=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="SQLite file holding the records (parent directories are created; kept across restarts).",
)
@click.option(
    "--seed",
    "seed_path",
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Seed YAML with object types, fields, users, views and skills [default: the bundled "
    "sample_data/seed.yaml].",
)
@click.option(
    "--api-key",
    default=None,
    help="API key clients must send in x-api-key [default: env RECORDSYNC_API_KEY, else a "
    "generated sk_live_ key printed once].",
)
@click.option(
    "--fault",
    "faults",
    multiple=True,
    metavar="SPEC",
    help="Inject a fault (repeatable); see docs for the SPEC syntax.",
)
@click.option(
    "--quirks",
    type=click.Choice(["hosted"]),
    default=None,
    help="Answer as the hosted service is known to where it differs from the contract: a "
    "redirect for a bad key, 204 on DELETE, extra keys, record ids as strings.",
)
def sandbox(
    host: str,
    port: int,
    db_path: Path,
    seed_path: Path | None,
    api_key: str | None,
    faults: tuple[str, ...],
    quirks: str | None,
) -> None:
    """Run the local record service: the hosted service's interface on SQLite."""
    from recordsync.sandbox import create_app
    from recordsync.sandbox.server import check_port_free, serve

    check_port_free(host, port)
    app = create_app(
        db_path,
        seed=seed_path,
        api_key=Secret(api_key) if api_key else None,
        faults=list(faults) or None,
        quirks=quirks,
    )
    key: Secret = app.state.api_key
    origin: str = app.state.api_key_origin
    click.echo(f"recordsync sandbox on http://{host}:{port}  (db: {db_path})")
    if origin == "generated":
        click.echo(f"API key (generated, shown once): {key.reveal()}")
        click.echo("  export RECORDSYNC_API_KEY=<that key> to reuse it next time.")
    else:
        click.echo(f"API key: from {'--api-key' if origin == 'argument' else 'RECORDSYNC_API_KEY'}")
    if faults:
        click.echo(f"faults: {', '.join(faults)}")
    if quirks:
        click.echo(f"quirks: {quirks} (answers as the hosted service is known to)")
    click.echo(f"OpenAPI document: http://{host}:{port}/openapi.json   (Ctrl-C to stop)")
    serve(app, host=host, port=port)


COMMANDS: list[click.Command] = [sandbox]

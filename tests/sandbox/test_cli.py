"""``recordsync sandbox``: options, the key banner, and errors as exit codes."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recordsync.cli import cli, main


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Capture the call to the (blocking) foreground server instead of serving."""
    calls: list[dict[str, Any]] = []

    def fake_serve(app: Any, host: str, port: int) -> None:
        calls.append({"app": app, "host": host, "port": port})

    monkeypatch.setattr("recordsync.sandbox.server.serve", fake_serve)
    monkeypatch.setattr("recordsync.sandbox.server.check_port_free", lambda host, port: None)
    return calls


def test_help_lists_every_option() -> None:
    result = CliRunner().invoke(cli, ["sandbox", "--help"])
    assert result.exit_code == 0
    for option in ("--host", "--port", "--db", "--seed", "--api-key", "--fault"):
        assert option in result.output


def test_generated_key_is_printed_once(
    tmp_path: Path, served: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECORDSYNC_API_KEY", raising=False)
    db = tmp_path / "x" / "s.db"
    result = CliRunner().invoke(cli, ["sandbox", "--db", str(db), "--port", "9999"])
    assert result.exit_code == 0, result.output
    key = served[0]["app"].state.api_key.reveal()
    assert key.startswith("sk_live_") and result.output.count(key) == 1
    assert served[0]["port"] == 9999 and db.exists()


def test_given_key_is_never_printed(tmp_path: Path, served: list[dict[str, Any]]) -> None:
    result = CliRunner().invoke(
        cli, ["sandbox", "--db", str(tmp_path / "s.db"), "--api-key", "sk_live_secret_1"]
    )
    assert result.exit_code == 0
    assert "sk_live_secret_1" not in result.output and "--api-key" in result.output
    assert served[0]["app"].state.api_key.reveal() == "sk_live_secret_1"


def test_bad_seed_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], served: list[dict[str, Any]]
) -> None:
    seed = tmp_path / "seed.yaml"
    seed.write_text("object_types: []\nextra: 1\n", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["sandbox", "--db", str(tmp_path / "s.db"), "--seed", str(seed)])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert str(seed) in err and "extra" in err
    assert served == []


def test_port_in_use_exits_2_before_printing_a_banner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as info:
            main(["sandbox", "--db", str(tmp_path / "s.db"), "--port", str(port)])
    assert info.value.code == 2
    out = capsys.readouterr()
    assert f"127.0.0.1:{port}" in out.err and "--port" in out.err
    assert "recordsync sandbox on" not in out.out
    assert not (tmp_path / "s.db").exists()

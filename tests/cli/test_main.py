import subprocess
import sys

import pytest

from recordsync import __version__
from recordsync.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["no-such-command"])
    assert exc.value.code == 2
    assert "no-such-command" in capsys.readouterr().err


def test_python_dash_m_works() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "recordsync", "--help"], capture_output=True, text=True, check=True
    )
    assert "recordsync" in out.stdout


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (RuntimeError("boom"), "unexpected RuntimeError: boom"),
        (PermissionError(13, "Permission denied", "reports/x"), "Permission denied on reports/x"),
    ],
)
def test_an_unnamed_error_is_exit_3_with_one_line_and_no_traceback(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: Exception,
    shown: str,
) -> None:
    from recordsync.cli import validate_cmds

    def broken(*a: object, **kw: object) -> None:
        raise error

    monkeypatch.setattr(validate_cmds, "load_pipeline", broken)
    monkeypatch.delenv("RECORDSYNC_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exc:
        main(["validate", "p.yaml"])
    err = capsys.readouterr().err
    assert exc.value.code == 3 and shown in err and "Traceback" not in err
    assert "RECORDSYNC_DEBUG=1" in err

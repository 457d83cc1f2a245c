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

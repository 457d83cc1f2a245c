"""The Kubernetes CronJob of docs/scheduling.md: valid YAML, a command line the CLI accepts
(and runs), the key from a Secret, the state on the volume, exit codes as the CLI's."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from recordsync.cli import cli as recordsync_cli
from recordsync.core.errors import EXIT_CONFIG, EXIT_ROWS_FAILED

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy" / "kubernetes" / "recordsync-nightly.yaml"
PAGE = REPO / "docs" / "scheduling.md"


def _cronjob() -> dict[str, Any]:
    docs = list(yaml.safe_load_all(MANIFEST.read_text(encoding="utf-8")))
    assert [d["kind"] for d in docs] == ["PersistentVolumeClaim", "CronJob"]
    cronjob: dict[str, Any] = docs[1]
    assert cronjob["apiVersion"] == "batch/v1"
    claim = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["volumes"][0]
    assert claim["persistentVolumeClaim"]["claimName"] == docs[0]["metadata"]["name"]
    return cronjob


def _container(cronjob: dict[str, Any]) -> dict[str, Any]:
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_the_command_line_is_one_the_cli_accepts_with_the_state_on_the_volume() -> None:
    cronjob = _cronjob()
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    container = _container(cronjob)
    command = container["command"]
    assert command[:3] == ["recordsync", "run", "pipelines/nightly.yaml"]
    ctx = recordsync_cli.make_context("recordsync", command[1:], resilient_parsing=True)
    name, run, args = recordsync_cli.resolve_command(ctx, command[1:])
    assert name == "run" and run is not None
    params = run.make_context("run", args).params
    (mount,) = container["volumeMounts"]
    volume = Path(mount["mountPath"])
    assert volume in params["state_db"].parents and volume in params["report_dir"].parents
    assert params["quiet"] and not params["dry_run"]


def test_the_key_comes_from_a_secret_and_never_from_the_manifest() -> None:
    env = {e["name"]: e for e in _container(_cronjob())["env"]}
    assert set(env["RECORDSYNC_API_KEY"]) == {"name", "valueFrom"}
    assert "secretKeyRef" in env["RECORDSYNC_API_KEY"]["valueFrom"]
    assert not re.search(r"sk_(live|test)", MANIFEST.read_text(encoding="utf-8"))


def test_only_exit_3_is_retried() -> None:
    job = _cronjob()["spec"]["jobTemplate"]["spec"]
    (rule,) = job["podFailurePolicy"]["rules"]
    assert rule["action"] == "FailJob" and rule["onExitCodes"]["operator"] == "In"
    assert sorted(rule["onExitCodes"]["values"]) == [EXIT_ROWS_FAILED, EXIT_CONFIG]
    assert job["template"]["spec"]["restartPolicy"] == "Never"


def test_the_command_runs(project: Path, cli: Callable[..., int]) -> None:
    command = _container(_cronjob())["command"]
    args = [a.replace("/data", str(project / "data")) for a in command[1:]]
    assert cli(*args) == EXIT_ROWS_FAILED  # the sample's bad rows, on purpose
    assert (project / "data" / "state.db").is_file()
    assert len(list((project / "data" / "reports").glob("*/summary.json"))) == 1


def test_the_page_shows_the_manifest_as_shipped_and_the_readme_links_the_page() -> None:
    page = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", page, flags=re.DOTALL)
    assert MANIFEST.read_text(encoding="utf-8") in blocks
    assert "docs/scheduling.md" in (REPO / "README.md").read_text(encoding="utf-8")

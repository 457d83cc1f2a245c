"""What every orchestrator wrapper shares: the run as ``recordsync run`` does it, the outcome
as metadata, and which outcomes fail the task (no orchestrator needed)."""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.integrations.support import clean_mapping

from recordsync.integrations.outcome import SyncOptionArgs, SyncOptions, SyncOutcome, run_sync


@pytest.mark.parametrize(
    ("code", "accept", "fails", "retry"),
    [
        (0, False, False, False),
        (1, False, True, False),
        (1, True, False, False),
        (2, True, True, False),
        (3, True, True, True),
    ],
)
def test_exit_codes_map_to_success_or_failure(
    code: int, accept: bool, fails: bool, retry: bool
) -> None:
    outcome = SyncOutcome(Path("p.yaml"), code, None, None, "why" if code > 1 else None)
    failure = outcome.failure(accept_rows_not_ok=accept)
    assert (failure is not None) is fails
    if failure is not None:
        assert failure.startswith(f"recordsync run p.yaml exited {code}")
    assert outcome.retry_may_help() is retry


def test_the_outcome_is_the_cli_run_with_the_summary_as_metadata(
    project: Path, cli: Callable[..., int]
) -> None:
    outcome = run_sync("pipelines/nightly.yaml", report_dir=project / "out")
    assert outcome.exit_code == 1 == cli("run", "pipelines/nightly.yaml", "-q")
    meta = outcome.metadata()
    assert json.loads(json.dumps(meta)) == meta
    summary = json.loads(Path(meta["report_dir"], "summary.json").read_text(encoding="utf-8"))
    assert Path(meta["report_dir"]).parent == project / "out"
    assert meta["run_id"] == summary["run_id"] and meta["accounting_ok"] is True
    assert meta["totals"] == summary["totals"]
    assert meta["steps"]["contacts"]["rows_not_ok"] == summary["steps"][1]["rows_not_ok"]
    assert meta["mirror_deletes_skipped"] == [] and meta["warnings"] == summary["warnings"]
    assert Path(meta["report_html"]).is_file()
    assert outcome.reason() == (
        f"16 invalid, 1 duplicate rows: see {outcome.report_dir}/failures.csv"
    )


def test_a_second_clean_run_is_unchanged_and_succeeds(project: Path) -> None:
    mapping = clean_mapping(project)
    first, second = run_sync(mapping), run_sync(mapping)
    assert first.metadata()["totals"]["created"] == 3
    assert second.metadata()["totals"]["rows_unchanged"] == 3
    assert second.failure() is None and second.reason() == ""


def test_a_refused_run_has_no_report_and_names_the_file(project: Path) -> None:
    outcome = run_sync("pipelines/typo.yaml")
    assert (outcome.exit_code, outcome.report_dir, outcome.report_html) == (2, None, None)
    assert outcome.metadata() == {
        "pipeline": "pipelines/typo.yaml",
        "exit_code": 2,
        "error": "pipelines/typo.yaml: the pipeline file does not exist",
    }
    assert not (project / "reports").exists()


def test_options_by_name_go_over_the_options_object(project: Path) -> None:
    kwargs: dict[str, object] = {"state_db": "s.db", "retries": 3}
    options = SyncOptions.take(kwargs, SyncOptions(dry_run=True, state_db="old.db"))
    assert options == SyncOptions(dry_run=True, state_db="s.db") and kwargs == {"retries": 3}
    outcome = run_sync(
        clean_mapping(project), SyncOptions(report_dir="a", dry_run=True), report_dir="b"
    )
    assert outcome.report_dir is not None and outcome.report_dir.parent == project / "b"
    assert outcome.metadata()["dry_run"] is True and not (project / "a").exists()
    with pytest.raises(TypeError, match="state_dir"):
        run_sync(clean_mapping(project), state_dir="s.db")  # type: ignore[call-arg]


def test_the_typed_keyword_arguments_are_the_options() -> None:
    """run_sync's typed ``**kwargs`` list SyncOptions' fields again: the two stay the same."""
    hints = typing.get_type_hints(SyncOptionArgs)
    fields = {f.name: f.type for f in dataclasses.fields(SyncOptions)}
    assert list(hints) == list(fields)
    assert all(typing.get_type_hints(SyncOptions)[name] == hints[name] for name in fields)

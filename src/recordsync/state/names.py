"""The name a pipeline's state is kept under (ledger scopes, run journal, lock file).

One function for both sides: ``recordsync run`` (which has the loaded pipeline) and
``recordsync state show|reset`` (which get a name or a pipeline file on the command line).
The name is the pipeline config's ``name``, else the pipeline file's stem.
"""

from __future__ import annotations

from pathlib import Path

from recordsync.config.models import name_too_long, pipeline_name
from recordsync.config.yamlmarks import load_yaml
from recordsync.core.errors import ConfigError

PIPELINE_SUFFIXES = (".yaml", ".yml")


def state_name(config_name: str | None, pipeline_path: str | Path) -> str:
    """``name:`` of the pipeline config, else the file's stem (``pipelines/nightly.yaml``).

    A ConfigError when it is longer than
    :data:`recordsync.config.models.MAX_PIPELINE_NAME` (it names a file)."""
    return pipeline_name(config_name, pipeline_path)


def state_name_of(arg: str) -> str:
    """The state name for a command-line argument: a pipeline file (its ``name:``, else its
    stem) or a pipeline name as it is."""
    path = Path(arg)
    if path.suffix not in PIPELINE_SUFFIXES:
        reason = name_too_long(arg)
        if reason is not None:
            raise ConfigError(f"{arg[:40]}…: {reason}", hint="give the pipeline's name or file")
        return arg
    name: str | None = None
    if path.is_file():
        try:
            data = load_yaml(path)[0]
        except ConfigError:
            data = None
        mapping = isinstance(data, dict) and "object_type" in data and "steps" not in data
        if mapping:  # a mapping run as a one-step pipeline: its `name:` is the record name
            data = None
        if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"]:
            name = data["name"]
    return state_name(name, path)

"""What a run does once it is over, and how it checks what it wrote: the pipeline's
``after_run:`` (a skill of the service triggered with the run's summary) and ``verify:``
(records read back and compared with what was sent; a mapping may override it).

```yaml
after_run:
  skill: {id: 00000000-0000-4000-8000-000000000001, when: [failed, rows_not_ok]}
verify: {sample: 10, max_mismatch: 0}
```
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import Field, field_validator

from recordsync.config.mapping_parts import Strict

When = Literal["failed", "rows_not_ok", "always"]
"""``failed``: the run stopped (exit 2 or 3 with a report: aborted, authentication, the
schema could not be read) or its report does not add up; ``rows_not_ok``: exit 1 (rows not
ok, mirror deletes failed or skipped, read-back mismatches over the limit); ``always``."""


_DEFAULT_WHEN: list[When] = ["failed", "rows_not_ok"]


class SkillTrigger(Strict):
    """``after_run.skill``: the service's skill webhook, triggered with the run's summary."""

    id: str
    when: list[When] = Field(default_factory=lambda: _DEFAULT_WHEN.copy(), min_length=1)

    @field_validator("id", mode="before")
    @classmethod
    def _uuid(cls, v: object) -> str:
        if not isinstance(v, str):
            raise ValueError(
                "must be the skill's id as a string, e.g. 00000000-0000-4000-8000-000000000001"
            )
        try:
            return str(UUID(v.strip()))
        except ValueError:
            raise ValueError(
                f"{v!r} is not a skill id: skill ids are UUIDs, e.g. "
                "00000000-0000-4000-8000-000000000001 (copy it from the service's skill page)"
            ) from None

    @field_validator("when")
    @classmethod
    def _no_repeats(cls, v: list[When]) -> list[When]:
        return list(dict.fromkeys(v))


class AfterRun(Strict):
    skill: SkillTrigger | None = None


class VerifySettings(Strict):
    """``verify:`` of a pipeline: after each step, read back up to ``sample`` of its records
    (half from the rows it wrote, half from rows it found unchanged) and compare them with
    what was sent. More than ``max_mismatch`` records that differ make the run exit 1."""

    enabled: bool = True
    sample: int = Field(default=10, ge=0, le=10_000)
    max_mismatch: int = Field(default=0, ge=0)


class VerifyOverride(Strict):
    """``verify:`` of a mapping: any key given overrides the pipeline's for that step."""

    enabled: bool | None = None
    sample: int | None = Field(default=None, ge=0, le=10_000)
    max_mismatch: int | None = Field(default=None, ge=0)

    def over(self, base: VerifySettings) -> VerifySettings:
        given = {k: v for k, v in self.model_dump().items() if v is not None}
        return base.model_copy(update=given)

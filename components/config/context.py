"""What the config checks know besides the stack file: read once by the loader, never inside a model.

The cross-section checks are pure functions of the validated config and this context. The loader
(:func:`components.config.loader.parse_stack_config`) builds it with :func:`read_context` and hands it to pydantic as
the validation context (``model_validate(..., context=...)``); :class:`~components.config.stack.StackConfig` keeps it
as ``cfg.context`` for the checks and the advisories. Nothing else reads the clock, ``HPI_AS_OF`` or
``verified/<stack>.json``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from policies import addon_builds, cluster_versions
from policies import capacity_rules as cap

from . import observed

NOT_LOADED = "no evaluation date: the config was not validated by the loader (components/config/loader.py)"


@dataclass(frozen=True)
class ValidationContext:
    """The date the support calendar is judged on, and what ``tools.verify`` observed (``verified/*.json``)."""

    today: dt.date | None = None
    today_problem: str = NOT_LOADED  # why there is no date (a malformed HPI_AS_OF); unused when ``today`` is set
    observations: observed.Observations | None = None  # this stack's verified/<stack>.json
    observations_problem: str | None = None  # that file exists but is not what verify writes
    addon_listings: tuple[addon_builds.Listing, ...] = field(default=())  # the region's, over every verified file

    @property
    def allocatable(self) -> dict[str, cap.ObservedAllocatable]:
        """Per instance group, the allocatable verify read from its nodes (empty when never observed)."""
        return observed.allocatable_of(self.observations)


def read_context(stack: str | None, region: str | None) -> ValidationContext:
    """Read the context of one stack: today (or ``HPI_AS_OF``), its observations, its region's add-on listings."""
    try:
        today, today_problem = cluster_versions.today(), ""
    except ValueError as err:  # a malformed HPI_AS_OF: the version cannot be judged, the check says why
        today, today_problem = None, str(err)
    obs, problem = None, None
    try:
        obs = observed.load(stack) if stack else None
    except observed.ObservationsError as err:
        problem = str(err)
    listings = observed.addon_build_listings(region) if region else ()
    return ValidationContext(today, today_problem, obs, problem, listings)

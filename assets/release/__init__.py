"""The `release` stage: release candidate and release assets with their contract checks, the
read-back check, the rebuild job, a weekly schedule and a MIMIC-IV source sensor."""

from assets.release.assets import ASSETS
from assets.release.automation import SCHEDULES, SENSORS, release_schedule
from assets.release.checks import CHECKS
from assets.release.rebuild import JOBS

__all__ = ["ASSETS", "CHECKS", "JOBS", "SCHEDULES", "SENSORS", "release_schedule"]

"""The Dagster code location: every stage's assets, checks, schedules and sensors."""

import dagster as dg

from assets import noise, release, source, templates
from assets.resources import ProjectPaths

STAGES = (source, templates, noise, release)

defs = dg.Definitions(
    assets=[a for stage in STAGES for a in stage.ASSETS],
    asset_checks=[c for stage in STAGES for c in getattr(stage, "CHECKS", [])],
    jobs=list(release.JOBS),
    schedules=list(release.SCHEDULES),
    sensors=list(release.SENSORS),
    resources={"paths": ProjectPaths()},
)

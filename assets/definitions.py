"""The Dagster code location: every stage's assets and checks, and the automation over them."""

import dagster as dg

from assets import automation, noise, release, source, templates
from assets.resources import ProjectPaths

STAGES = (source, templates, noise, release)

defs = dg.Definitions(
    assets=[a for stage in STAGES for a in stage.ASSETS],
    asset_checks=[c for stage in STAGES for c in stage.CHECKS],
    jobs=list(automation.JOBS),
    schedules=list(automation.SCHEDULES),
    sensors=list(automation.SENSORS),
    resources={"paths": ProjectPaths()},
)

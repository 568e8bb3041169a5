"""The Dagster code location: every stage's assets, checks, schedules and sensors."""

import dagster as dg

from assets import source
from assets.resources import ProjectPaths

defs = dg.Definitions(
    assets=[*source.ASSETS],
    resources={"paths": ProjectPaths()},
)

"""When releases are rebuilt: a weekly schedule, and a sensor watching the configured MIMIC-IV source.

Both start the ``rebuild_release`` job (every asset, source to release) and can be switched on and
off in the Dagster UI. The MIMIC-IV source is configured by the environment variable
``ROBUSTGYM_MIMIC_DIRS`` (PhysioNet-layout folders separated by the OS path separator, ``:`` on
Linux), read at each evaluation, never at import. Without it, the schedule rebuilds from the
built-in synthetic source and the sensor skips.
"""

import os
from pathlib import Path

import dagster as dg

from assets.release.rebuild import rebuild_release_job
from pipeline.release.source_watch import source_change_digest

MIMIC_DIRS_ENV = "ROBUSTGYM_MIMIC_DIRS"
DEFAULT_CRON = "0 4 * * 1"  # Mondays 04:00
SENSOR_INTERVAL_SECONDS = 300


def configured_mimic_dirs() -> list[str]:
    return [d for d in os.environ.get(MIMIC_DIRS_ENV, "").split(os.pathsep) if d.strip()]


def rebuild_run_config(mimic_dirs: list[str]) -> dict:
    config = {"kind": "mimic_iv", "mimic_dirs": mimic_dirs} if mimic_dirs else {"kind": "synthetic"}
    return {"ops": {"rebuild_release_graph": {"config": config}}}


def release_schedule(cron_schedule: str = DEFAULT_CRON, name: str = "weekly_release_rebuild") -> dg.ScheduleDefinition:
    """A schedule rebuilding the release on ``cron_schedule`` (weekly by default)."""

    @dg.schedule(name=name, cron_schedule=cron_schedule, job=rebuild_release_job,
                 default_status=dg.DefaultScheduleStatus.RUNNING,
                 description=f"Rebuild every asset and publish a release ({cron_schedule}); from the MIMIC-IV "
                             f"folders in ${MIMIC_DIRS_ENV} when set, else from the synthetic source.")
    def _schedule(context: dg.ScheduleEvaluationContext):
        return dg.RunRequest(run_config=rebuild_run_config(configured_mimic_dirs()),
                             tags={"robustgym/trigger": "schedule"})

    return _schedule


@dg.sensor(name="mimic_source_changed", job=rebuild_release_job, minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
           default_status=dg.DefaultSensorStatus.RUNNING,
           description=f"Rebuild when the MIMIC-IV folders in ${MIMIC_DIRS_ENV} change (files, sizes, times).")
def mimic_source_changed(context: dg.SensorEvaluationContext):
    dirs = configured_mimic_dirs()
    if not dirs:
        return dg.SkipReason(f"no MIMIC-IV source configured: set {MIMIC_DIRS_ENV} to its folder(s)")
    digest, problems = source_change_digest([Path(d) for d in dirs])
    if problems:
        return dg.SkipReason("the configured MIMIC-IV source is not readable: " + "; ".join(problems))
    if digest == context.cursor:
        return dg.SkipReason(f"MIMIC-IV source unchanged ({digest[:12]})")
    context.update_cursor(digest)
    return dg.RunRequest(run_key=digest, run_config=rebuild_run_config(dirs),
                         tags={"robustgym/trigger": "mimic_source_changed", "robustgym/source_digest": digest[:12]})


SCHEDULES = [release_schedule()]
SENSORS = [mimic_source_changed]

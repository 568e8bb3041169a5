"""When the graph rebuilds by itself: a weekly schedule and a MIMIC-IV sensor refresh the source,
and declarative automation carries every later stage along, in dependency order.

The graph mixes partitions (clean tasks by intent, twins by noise level), so no single Dagster
job can hold it; the UI's *Materialize all* runs it as a backfill. Unattended, the work is split
the same way:

- ``refresh_source``, a real asset job (``source_database`` and ``template_catalogue``), is what
  the ``weekly_release_rebuild`` schedule and the ``mimic_source_changed`` sensor launch, with the
  source's run config (the MIMIC-IV folders in ``ROBUSTGYM_MIMIC_DIRS``, read at each tick, never
  at import; the synthetic source without it; ``ROBUSTGYM_MIMIC_ALLOW_MISSING=1`` lets them lack
  tables, whose intents are then left out).
- Every later asset carries ``REBUILD_AFTER_UPSTREAM``: once something upstream was materialized
  since it was last built, and nothing upstream is missing, running, about to run or failed, it is
  requested. The ``rebuild_downstream`` automation sensor evaluates these conditions. So a noise
  level starts only when all six intents' clean tasks are done, and a partition whose blocking
  check failed (its step fails, see ``assets/gate.py``) stops what depends on it.

Everything ships STOPPED: a user switches the schedule or the sensor on, and ``rebuild_downstream``.
"""

import os
from pathlib import Path

import dagster as dg

from pipeline.release.source_watch import source_change_digest
from pipeline.vocabulary import AssetName

MIMIC_DIRS_ENV = "ROBUSTGYM_MIMIC_DIRS"
ALLOW_MISSING_ENV = "ROBUSTGYM_MIMIC_ALLOW_MISSING"  # "1": a folder may lack tables (the demo lacks chartevents)
DEFAULT_CRON = "0 4 * * 1"  # Mondays 04:00
SENSOR_INTERVAL_SECONDS = 300
REFRESH_SOURCE_JOB = "refresh_source"
AUTOMATION_SENSOR = "rebuild_downstream"

_A = dg.AutomationCondition
REBUILD_AFTER_UPSTREAM = (
    _A.any_deps_match(_A.newly_updated()).since_last_handled()
    & ~_A.any_deps_missing()
    & ~_A.any_deps_in_progress()
    & ~_A.any_deps_match(_A.will_be_requested())
    & ~_A.any_deps_match(_A.execution_failed())
    & ~_A.in_progress()
).with_label("rebuild after upstream")

refresh_source_job = dg.define_asset_job(
    REFRESH_SOURCE_JOB,
    selection=dg.AssetSelection.assets(AssetName.SOURCE_DATABASE.value, AssetName.SOURCE_ANOMALIES.value,
                                       AssetName.TEMPLATE_CATALOGUE.value),
    description="Rebuild the source database, its audit and the template catalogue; with the rebuild_downstream "
                "automation sensor on, every later stage follows.",
)


def configured_mimic_dirs() -> list[str]:
    return [d for d in os.environ.get(MIMIC_DIRS_ENV, "").split(os.pathsep) if d.strip()]


def refresh_run_config(mimic_dirs: list[str]) -> dict:
    config = {"kind": "mimic_iv", "mimic_dirs": mimic_dirs} if mimic_dirs else {"kind": "synthetic"}
    if mimic_dirs and os.environ.get(ALLOW_MISSING_ENV, "").strip() == "1":
        config["allow_missing"] = True
    return {"ops": {AssetName.SOURCE_DATABASE.value: {"config": config}}}


def release_schedule(cron_schedule: str = DEFAULT_CRON, name: str = "weekly_release_rebuild") -> dg.ScheduleDefinition:
    """A schedule refreshing the source on ``cron_schedule`` (weekly by default); STOPPED until switched on."""

    @dg.schedule(name=name, cron_schedule=cron_schedule, job=refresh_source_job,
                 default_status=dg.DefaultScheduleStatus.STOPPED,
                 description=f"Rebuild the source ({cron_schedule}) from the MIMIC-IV folders in ${MIMIC_DIRS_ENV} "
                             f"when set, else the synthetic one; {AUTOMATION_SENSOR} rebuilds the rest.")
    def _schedule(context: dg.ScheduleEvaluationContext):
        return dg.RunRequest(run_config=refresh_run_config(configured_mimic_dirs()),
                             tags={"robustgym/trigger": "schedule"})

    return _schedule


@dg.sensor(name="mimic_source_changed", job=refresh_source_job, minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
           default_status=dg.DefaultSensorStatus.STOPPED,
           description=f"Rebuild the source when the MIMIC-IV folders in ${MIMIC_DIRS_ENV} change (files, sizes, "
                       f"times); {AUTOMATION_SENSOR} rebuilds the rest.")
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
    return dg.RunRequest(run_key=digest, run_config=refresh_run_config(dirs),
                         tags={"robustgym/trigger": "mimic_source_changed", "robustgym/source_digest": digest[:12]})


rebuild_downstream = dg.AutomationConditionSensorDefinition(
    AUTOMATION_SENSOR, target=dg.AssetSelection.all(), default_status=dg.DefaultSensorStatus.STOPPED,
    description="Materializes each stage once everything upstream of it is rebuilt and passed its blocking checks.")

JOBS = [refresh_source_job]
SCHEDULES = [release_schedule()]
SENSORS = [mimic_source_changed, rebuild_downstream]

"""Declarative automation carries the graph after a source refresh: each stage once everything
upstream is rebuilt, never next to a running or failed upstream partition.

The conditions are evaluated by Dagster's own evaluator on an instance whose event log holds the
materializations (reported as they would be by runs) and a real failed run of one partition.
"""

import dagster as dg
import pytest

from assets.definitions import defs
from assets.resources import ProjectPaths
from assets.templates.assets import clean_tasks
from pipeline.vocabulary import AssetName, Intent, NoiseLevel

CLEAN, NOISE = AssetName.CLEAN_TASKS.value, AssetName.NOISE_PAIRS.value


class Evaluator:
    def __init__(self):
        self.instance = dg.DagsterInstance.ephemeral()
        self.cursor = None

    def materialized(self, asset: str, partitions=(None,)):
        for p in partitions:
            self.instance.report_runless_asset_event(dg.AssetMaterialization(asset, partition=p))

    def requested(self) -> dict[str, set]:
        result = dg.evaluate_automation_conditions(defs=defs, instance=self.instance, cursor=self.cursor)
        self.cursor = result.cursor
        out = {}
        for r in result.results:
            if r.true_subset.size:
                key = r.key.to_user_string() if isinstance(r.key, dg.AssetKey) else str(r.key)
                out[key] = set(r.true_subset.expensively_compute_partition_keys()) if r.true_subset.is_partitioned \
                    else {None}
        return out


@pytest.fixture()
def evaluator():
    evaluator = Evaluator()
    # The sensor's first tick, on an empty instance, requests nothing: nothing upstream is built.
    assert evaluator.requested() == {}
    return evaluator


def test_a_refreshed_source_requests_every_intent_and_nothing_further_yet(evaluator):
    evaluator.materialized(AssetName.SOURCE_DATABASE.value)
    evaluator.materialized(AssetName.SOURCE_ANOMALIES.value)  # the refresh job builds it with the source
    evaluator.materialized(AssetName.TEMPLATE_CATALOGUE.value)
    assert evaluator.requested() == {CLEAN: {i.value for i in Intent}}
    # Requested once: the same refresh does not request the intents again.
    assert evaluator.requested() == {}


def test_noise_waits_for_the_last_intent_then_every_level_is_requested(evaluator):
    evaluator.materialized(AssetName.SOURCE_DATABASE.value)
    evaluator.materialized(AssetName.SOURCE_ANOMALIES.value)  # the refresh job builds it with the source
    evaluator.materialized(AssetName.TEMPLATE_CATALOGUE.value)
    evaluator.requested()
    intents = [i.value for i in Intent]
    evaluator.materialized(CLEAN, intents[:-1])
    assert NOISE not in evaluator.requested()
    evaluator.materialized(CLEAN, intents[-1:])
    requested = evaluator.requested()
    assert requested == {NOISE: {lv.value for lv in NoiseLevel}}
    evaluator.materialized(NOISE, [lv.value for lv in NoiseLevel])
    assert evaluator.requested() == {AssetName.RELEASE_CANDIDATE.value: {None}}
    evaluator.materialized(AssetName.RELEASE_CANDIDATE.value)
    assert evaluator.requested() == {AssetName.RELEASE.value: {None}}


def test_a_failed_intent_stops_the_noise_stage_until_it_is_rebuilt(evaluator, tmp_path):
    evaluator.materialized(AssetName.SOURCE_DATABASE.value)
    evaluator.materialized(AssetName.SOURCE_ANOMALIES.value)  # the refresh job builds it with the source
    evaluator.materialized(AssetName.TEMPLATE_CATALOGUE.value)
    evaluator.requested()
    intents = [i.value for i in Intent]
    evaluator.materialized(CLEAN, intents)
    evaluator.requested()  # the noise levels are requested ...
    evaluator.materialized(NOISE, [lv.value for lv in NoiseLevel])
    evaluator.requested()
    # ... then one intent is rebuilt and fails (a real run: no source database under these paths).
    failed = dg.materialize([clean_tasks], partition_key=intents[0], instance=evaluator.instance,
                            resources={"paths": ProjectPaths(data_dir=str(tmp_path / "nothing"))},
                            raise_on_error=False)
    assert not failed.success
    evaluator.materialized(CLEAN, intents[1:])
    assert NOISE not in evaluator.requested()
    evaluator.materialized(CLEAN, intents[:1])
    assert evaluator.requested().get(NOISE) == {lv.value for lv in NoiseLevel}


def test_the_schedule_launches_the_refresh_source_asset_job_and_it_materializes_the_head(tmp_path, monkeypatch):
    """What the schedule requests is a run of a real asset job: its run shows the assets, not one op."""
    from assets.automation import MIMIC_DIRS_ENV, release_schedule

    monkeypatch.delenv(MIMIC_DIRS_ENV, raising=False)
    schedule = release_schedule()
    (request,) = schedule.evaluate_tick(dg.build_schedule_context()).run_requests
    job = defs.resolve_job_def(schedule.job_name)
    run_config = {**request.run_config, "resources": {"paths": {"config": {"data_dir": str(tmp_path / "data")}}}}
    run_config["ops"]["source_database"]["config"]["patients"] = 100  # small, for the test
    result = job.execute_in_process(run_config=run_config, instance=dg.DagsterInstance.ephemeral(),
                                    tags=request.tags)
    assert result.success
    assert {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()} == {
        AssetName.SOURCE_DATABASE.value, AssetName.SOURCE_ANOMALIES.value, AssetName.TEMPLATE_CATALOGUE.value}
    assert result.dagster_run.tags["robustgym/trigger"] == "schedule"
    assert (tmp_path / "data" / "source.duckdb").exists()

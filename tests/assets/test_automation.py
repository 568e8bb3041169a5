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
    evaluator.materialized(AssetName.TEMPLATE_CATALOGUE.value)
    assert evaluator.requested() == {CLEAN: {i.value for i in Intent}}
    # Requested once: the same refresh does not request the intents again.
    assert evaluator.requested() == {}


def test_noise_waits_for_the_last_intent_then_every_level_is_requested(evaluator):
    evaluator.materialized(AssetName.SOURCE_DATABASE.value)
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

"""*Materialize all*, as the UI launches it: an asset backfill of every asset and partition, run by
Dagster's own backfill daemon logic, twice in a row with different configs.

The second backfill builds another source (other patients and seed), so the first one's clean task
files are stale while the second runs: each partition's checks must read its own new output only, no
noise level may start before every intent's clean tasks are done, and the new release must rest on
the new source alone. (The daemon, workspace and run launcher are Dagster's test utilities: the
backfill logic and the runs are the real ones; runs execute in process, one after another.)
"""

import logging
import time
from pathlib import Path

import dagster as dg
import duckdb
import pyarrow.parquet as pq
import pytest

from pipeline.release import latest_version
from pipeline.source_db import read_source_info
from pipeline.vocabulary import AssetName, Intent, NoiseLevel

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _run_config(root: Path, *, patients: int, seed: int, version: str) -> dict:
    return {
        "execution": {"config": {"in_process": {}}},
        "resources": {"paths": {"config": {"data_dir": str(root / "data"), "releases_dir": str(root / "releases")}}},
        "ops": {AssetName.SOURCE_DATABASE.value: {"config": {"patients": patients, "seed": seed}},
                AssetName.CLEAN_TASKS.value: {"config": {"tasks_per_template": 1, "seed": seed}},
                AssetName.NOISE_PAIRS.value: {"config": {"target_pairs": 60, "seed": seed}},
                AssetName.RELEASE_CANDIDATE.value: {"config": {"seed": seed}},
                AssetName.RELEASE.value: {"config": {"version": version}}},
    }


def _materialize_all(instance, context, backfill_id: str, run_config: dict):
    from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
    from dagster._daemon.backfill import execute_backfill_iteration

    graph = context.create_request_context().asset_graph
    instance.add_backfill(PartitionBackfill.from_asset_partitions(
        backfill_id=backfill_id, asset_graph=graph, partition_names=None,
        asset_selection=list(graph.get_all_asset_keys()), backfill_timestamp=time.time(), tags={},
        dynamic_partitions_store=instance, all_partitions=True, title="Materialize all", description=None,
        run_config=run_config))
    for _ in range(50):
        list(execute_backfill_iteration(context, logging.getLogger("backfill")))
        backfill = instance.get_backfill(backfill_id)
        if backfill.status is not BulkActionStatus.REQUESTED:
            return backfill
    raise AssertionError(f"backfill {backfill_id} did not finish")


@pytest.fixture(scope="module")
def two_backfills(tmp_path_factory):
    from dagster._core.test_utils import create_test_daemon_workspace_context, instance_for_test
    from dagster._core.workspace.load_target import ModuleTarget

    root = tmp_path_factory.mktemp("materialize_all")
    overrides = {
        "run_launcher": {"module": "dagster._core.launcher.sync_in_memory_run_launcher",
                         "class": "SyncInMemoryRunLauncher"},
        "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"},
        "telemetry": {"enabled": False},
    }
    with instance_for_test(overrides=overrides) as instance:
        target = ModuleTarget(module_name="assets.definitions", attribute="defs", working_directory=str(REPO),
                              location_name="ehr-robustgym")
        with create_test_daemon_workspace_context(target, instance) as context:
            first = _materialize_all(instance, context, "first",
                                     _run_config(root, patients=100, seed=0, version="1.0.0"))
            second = _materialize_all(instance, context, "second",
                                      _run_config(root, patients=120, seed=1, version="1.1.0"))
            yield instance, root, first, second


def _runs(instance, backfill_id):
    return instance.get_run_records(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))


def test_materialize_all_succeeds_twice_in_a_row_with_different_configs(two_backfills):
    from dagster._core.execution.backfill import BulkActionStatus

    instance, root, first, second = two_backfills
    for backfill in (first, second):
        assert backfill.status is BulkActionStatus.COMPLETED_SUCCESS, backfill.backfill_id
        runs = _runs(instance, backfill.backfill_id)
        assert len(runs) == 1 + len(Intent) + len(NoiseLevel) + 1  # head, intents, levels, release
        assert {r.dagster_run.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
    assert sorted(p.name for p in (root / "releases").iterdir()) == ["1.0.0", "1.1.0", "latest"]
    assert latest_version(root / "releases") == "1.1.0"


def test_the_second_release_rests_on_the_second_source_alone(two_backfills):
    import json

    _, root, _, _ = two_backfills
    with duckdb.connect(str(root / "data" / "source.duckdb"), read_only=True) as con:
        fingerprint = read_source_info(con).fingerprint
    manifest = json.loads((root / "releases" / "1.1.0" / "manifest.json").read_text())
    first = json.loads((root / "releases" / "1.0.0" / "manifest.json").read_text())
    assert manifest["source"]["fingerprint"] == fingerprint != first["source"]["fingerprint"]
    for folder in ("clean_tasks", "noise"):
        for f in (root / "data" / folder).glob("*.parquet"):
            values = pq.read_table(str(f), columns=["base_fingerprint"]).column(0).unique().to_pylist()
            assert values in ([fingerprint], []), f
    tasks = pq.read_table(str(root / "releases" / "1.1.0" / "tasks" / "train.parquet"), columns=["base_fingerprint"])
    assert tasks.column(0).unique().to_pylist() == [fingerprint]


def test_each_partition_of_the_second_run_passed_its_own_blocking_checks(two_backfills):
    instance, _, _, second = two_backfills
    evaluations = []
    for record in _runs(instance, second.backfill_id):
        logs = instance.all_logs(record.dagster_run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        evaluations += [e.dagster_event.event_specific_data for e in logs]
    contract = {e.partition: e.passed for e in evaluations
                if e.asset_key.to_user_string() == AssetName.CLEAN_TASKS.value and e.check_name == "clean_tasks_contract"}
    assert set(contract) == {i.value for i in Intent}
    blocking_failed = [(e.check_name, e.partition) for e in evaluations
                       if not e.passed and e.severity is dg.AssetCheckSeverity.ERROR]
    assert blocking_failed == []


def test_no_noise_level_starts_before_every_intents_clean_tasks_are_done(two_backfills):
    instance, _, first, second = two_backfills
    for backfill in (first, second):
        runs = _runs(instance, backfill.backfill_id)
        selected = {r.dagster_run.run_id: {k.to_user_string() for k in r.dagster_run.asset_selection or ()}
                    for r in runs}
        clean_done = max(r.end_time for r in runs if AssetName.CLEAN_TASKS.value in selected[r.dagster_run.run_id])
        noise_started = [r.start_time for r in runs if AssetName.NOISE_PAIRS.value in selected[r.dagster_run.run_id]]
        assert len(noise_started) == len(NoiseLevel) and min(noise_started) >= clean_done

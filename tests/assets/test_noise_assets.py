"""The noise group materializes on the real demo: one Parquet file of proven twins per noise level."""

import json
import shutil

import dagster as dg
import pytest

from assets.noise import ASSETS, CHECKS
from assets.noise.assets import noise_pairs
from assets.noise.checks import NoiseCheck
from assets.resources import ProjectPaths
from pipeline.noise.report import summary_path
from pipeline.noise.task_files import read_twins, twins_path
from pipeline.templates import extract_clean_tasks
from pipeline.templates.summary import write_clean_tasks
from pipeline.vocabulary import NOISE_LEVEL_OF, AssetName, Group, Intent, NoiseLevel

TARGET = 90  # 30 twins per level


@pytest.fixture(scope="module")
def demo_paths(tmp_path_factory, demo_full_db) -> ProjectPaths:
    paths = ProjectPaths(data_dir=str(tmp_path_factory.mktemp("noise_assets") / "data"))
    paths.source_db.parent.mkdir(parents=True)
    shutil.copy(demo_full_db, paths.source_db)
    paths.clean_tasks_dir.mkdir(parents=True)
    clean = extract_clean_tasks(paths.source_db, tasks_per_template=2, seed=0).tasks
    for intent in Intent:
        write_clean_tasks([t for t in clean if t.intent is intent], paths.clean_tasks_dir / f"{intent.value}.parquet")
    return paths


def _materialize(paths, level: NoiseLevel, **config) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [noise_pairs, *CHECKS], partition_key=level.value, resources={"paths": paths},
        run_config={"ops": {AssetName.NOISE_PAIRS.value: {"config": {"target_pairs": TARGET, **config}}}})


@pytest.fixture(scope="module")
def runs(demo_paths):
    return {level: _materialize(demo_paths, level) for level in NoiseLevel}


def _checks(result) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_the_asset_is_in_the_noise_group_partitioned_by_level_after_the_clean_tasks():
    (spec,) = [s for a in ASSETS for s in a.specs]
    assert spec.key.to_user_string() == AssetName.NOISE_PAIRS.value and spec.group_name == Group.NOISE.value
    assert set(noise_pairs.partitions_def.get_partition_keys()) == {lv.value for lv in NoiseLevel}
    assert {d.asset_key.to_user_string() for d in spec.deps} == {AssetName.CLEAN_TASKS.value,
                                                                 AssetName.SOURCE_DATABASE.value,
                                                                 AssetName.SOURCE_ANOMALIES.value}


@pytest.mark.parametrize("level", list(NoiseLevel), ids=str)
def test_each_level_writes_its_proven_twins_and_passes_its_checks(demo_paths, runs, level):
    result = runs[level]
    assert result.success
    twins = read_twins(twins_path(demo_paths.noise_dir, level))
    assert len(twins) == TARGET // 3 and {t.noise_level for t in twins} == {level}
    assert {t.noise_type for t in twins} == {t for t in NOISE_LEVEL_OF if NOISE_LEVEL_OF[t] is level}
    checks = _checks(result)
    for name in (NoiseCheck.TWINS_PROVEN, NoiseCheck.EVERY_TYPE_BUILT, NoiseCheck.TWINS_RECHECK,
                 NoiseCheck.NOISY_TWINS_CONTRACT, NoiseCheck.PAIRS_CONTRACT):
        assert checks[name].passed, (name, checks[name].metadata)
    assert checks[NoiseCheck.TWINS_RECHECK].metadata["twins_rechecked"].value > 0
    assert {c.partition for c in checks.values()} == {level.value}


@pytest.mark.parametrize("level", list(NoiseLevel), ids=str)
def test_the_blocking_label_check_takes_the_builders_decision_for_each_twin_written_as_built(demo_paths, runs,
                                                                                            level):
    check = _checks(runs[level])[NoiseCheck.LABELS_DECIDABLE]
    twins = read_twins(twins_path(demo_paths.noise_dir, level))
    named = {t.clean_task_id for t in twins}
    assert check.passed, check.metadata
    # Every twin read back from Parquet equals the twin decided, and every clean task it names the task
    # the builder decided (trusting its stored answer); one in ten of those decisions is read again.
    assert check.metadata["decisions_reused"].value == len(twins) + len(named)
    assert check.metadata["tasks_checked"].value == len(twins) + len(named)
    assert 0 < check.metadata["reused_decisions_read_again"].value < len(twins) + len(named)


def test_the_metadata_shows_counts_drops_and_pairs_side_by_side(demo_paths, runs):
    (mat,) = runs[NoiseLevel.VALUE].asset_materializations_for_node(AssetName.NOISE_PAIRS.value)
    md = mat.metadata
    # The reference agents play beside the checks; what they scored reaches the metadata and the summary
    # the release reads.
    summary = json.loads(summary_path(demo_paths.noise_dir, NoiseLevel.VALUE).read_text())
    played = sorted((r.data["agent"], r.data["noise_type"], r.data["mechanism"], r.data["twins"])
                    for r in md["reference_agents"].records)
    assert played == sorted((agent, c["noise_type"], c["mechanism"], c["twins"])
                            for agent, cells in summary["difficulty"]["agents"].items() for c in cells)
    assert {agent for agent, *_ in played} == {"naive", "checking"}
    assert sum(n for agent, *_, n in played if agent == "naive") == summary["difficulty"]["twins_played"] > 0
    assert md["dagster/row_count"].value == TARGET // 3
    mix = {r.data["noise_type"]: r.data for r in md["noise_mix"].records}
    assert set(mix) == {"implausible_value", "unit_mismatch"}
    assert sum(r["twins"] for r in mix.values()) == sum(r["target"] for r in mix.values()) == TARGET // 3
    assert "| intent | level | missing_evidence |" in md["counts_intent_level_noise_type"].value
    assert "| noise type | reason | dropped | example |" in md["dropped_why"].value or md["dropped"].value == 0
    sample = md["sample_pairs"].value
    assert "| noise | clean question | clean answer | noisy question | what changed | expected outcome |" in sample
    assert "implausible_value" in sample and "unit_mismatch" in sample


def test_rematerializing_with_the_same_seed_writes_the_same_bytes(demo_paths, runs):
    path = twins_path(demo_paths.noise_dir, NoiseLevel.QUERY)
    before = path.read_bytes()
    assert _materialize(demo_paths, NoiseLevel.QUERY).success
    assert path.read_bytes() == before


def test_clean_tasks_of_another_source_are_refused_with_the_files_named(demo_paths, tmp_path, synthetic_db):
    paths = ProjectPaths(data_dir=str(tmp_path / "data"))
    paths.source_db.parent.mkdir(parents=True)
    shutil.copy(synthetic_db, paths.source_db)  # another source than the one the clean tasks were built on
    shutil.copytree(demo_paths.clean_tasks_dir, paths.clean_tasks_dir)
    result = dg.materialize([noise_pairs], partition_key="query", resources={"paths": paths}, raise_on_error=False,
                            run_config={"ops": {AssetName.NOISE_PAIRS.value: {"config": {"target_pairs": TARGET}}}})
    assert not result.success
    message = result.failure_data_for_node(AssetName.NOISE_PAIRS.value).user_failure_data.description
    assert "another source database" in message and "laboratory.parquet" in message
    assert not paths.noise_dir.exists()


def test_inconsistent_shares_fail_the_run_with_the_reason(demo_paths):
    with pytest.raises(Exception, match="level_shares must sum to 1"):
        _materialize(demo_paths, NoiseLevel.RECORD, level_shares={"record": 0.9})


def test_the_recheck_asks_its_statements_on_one_duckdb_thread(demo_paths, runs, small_statement_readers):
    from assets.noise import checks
    from pipeline.duckdb_memory import SMALL_STATEMENT_THREADS
    from pipeline.noise.task_files import read_clean_tasks

    opened = small_statement_readers(checks)
    twins = read_twins(twins_path(demo_paths.noise_dir, NoiseLevel.RECORD))
    clean = {t.task_id: t for t in read_clean_tasks(demo_paths.clean_tasks_dir)}
    result = checks.twins_recheck(demo_paths.source_db, twins, clean)
    assert result.passed and opened == [SMALL_STATEMENT_THREADS] == [1]

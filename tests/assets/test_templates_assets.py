"""The templates group materializes on the real demo: a catalogue, one Parquet file per intent, checks."""

import shutil

import dagster as dg
import pyarrow.parquet as pq
import pytest

from assets.resources import ProjectPaths
from assets.templates import ASSETS, CHECKS
from assets.release.rebuild import check_evaluations
from assets.templates.assets import clean_tasks, template_catalogue
from assets.templates.checks import TemplateCheck
from pipeline.task_model import arrow_schema, tasks_from_arrow
from pipeline.templates import REGISTRY
from pipeline.vocabulary import AssetName, Group, Intent, Level

PER_TEMPLATE = 3


def _paths(tmp_path, db) -> ProjectPaths:
    paths = ProjectPaths(data_dir=str(tmp_path / "data"))
    paths.source_db.parent.mkdir(parents=True)
    shutil.copy(db, paths.source_db)
    return paths


def _materialize_intent(paths: ProjectPaths, intent: Intent, checks=CHECKS, **kw) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [clean_tasks, *checks], partition_key=intent.value, resources={"paths": paths},
        run_config={"ops": {AssetName.CLEAN_TASKS.value: {"config": {"tasks_per_template": PER_TEMPLATE}}}}, **kw)


def _checks(result) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


@pytest.fixture(scope="module")
def demo_paths(tmp_path_factory, demo_full_db) -> ProjectPaths:
    return _paths(tmp_path_factory.mktemp("templates_assets"), demo_full_db)


@pytest.fixture(scope="module")
def laboratory_run(demo_paths):
    return _materialize_intent(demo_paths, Intent.LABORATORY)


def test_the_assets_are_in_the_templates_group_with_their_vocabulary_names():
    keys = {key.to_user_string(): spec.group_name for a in ASSETS for key, spec in
            ((s.key, s) for s in a.specs)}
    assert keys == {AssetName.TEMPLATE_CATALOGUE.value: Group.TEMPLATES.value,
                    AssetName.CLEAN_TASKS.value: Group.TEMPLATES.value}
    assert set(clean_tasks.partitions_def.get_partition_keys()) == {i.value for i in Intent}


def test_the_catalogue_lists_templates_per_intent_and_level_and_passes_its_check(tmp_path):
    paths = ProjectPaths(data_dir=str(tmp_path / "data"))
    result = dg.materialize([template_catalogue], resources={"paths": paths})
    assert result.success
    (mat,) = result.asset_materializations_for_node(AssetName.TEMPLATE_CATALOGUE.value)
    assert mat.metadata["templates"].value == len(REGISTRY)
    table = mat.metadata["per_intent_and_level"].value
    for intent in Intent:
        patient = len(REGISTRY.select([intent], Level.PATIENT))
        population = len(REGISTRY.select([intent], Level.POPULATION))
        assert f"| {intent.value} | {patient} | {population} | {patient + population} |" in table
    listing = mat.metadata["templates_by_intent_and_level"].value
    assert all(f"`{t.id}`" in listing for t in REGISTRY)
    assert _checks(result)[TemplateCheck.CATALOGUE_MEETS_ISSUE].passed
    assert (paths.clean_tasks_dir / "catalogue.json").exists()


def test_one_intent_materializes_alone_into_its_parquet_file(laboratory_run, demo_paths):
    assert laboratory_run.success
    path = demo_paths.clean_tasks_dir / "laboratory.parquet"
    table = pq.read_table(str(path))
    assert table.schema.equals(arrow_schema())
    tasks = tasks_from_arrow(table)
    assert {t.intent for t in tasks} == {Intent.LABORATORY}
    assert {t.template_id for t in tasks} == {t.id for t in REGISTRY.select([Intent.LABORATORY])}
    assert not (demo_paths.clean_tasks_dir / "medications.parquet").exists()


def test_the_materialization_reports_rows_columns_distributions_rejections_and_a_preview(laboratory_run, demo_paths):
    (mat,) = laboratory_run.asset_materializations_for_node(AssetName.CLEAN_TASKS.value)
    meta = mat.metadata
    rows = pq.read_table(str(demo_paths.clean_tasks_dir / "laboratory.parquet")).num_rows
    assert meta["dagster/row_count"].value == rows > 0
    assert [c.name for c in meta["dagster/column_schema"].schema.columns] == arrow_schema().names
    distribution = [r.data for r in meta["answers_per_level_and_type"].records]
    assert sum(r["tasks"] for r in distribution) == rows
    assert {"level": "patient", "answer_type": "number"} in [{k: r[k] for k in ("level", "answer_type")}
                                                           for r in distribution]
    assert "| lab_last_value |" in meta["rejections_per_template"].value
    assert "| lab_last_value | " in meta["preview"].value


def test_the_checks_pass_on_the_demo_each_on_its_partition(laboratory_run):
    checks = _checks(laboratory_run)
    assert set(checks) == {TemplateCheck.IDS_UNIQUE, TemplateCheck.EVERY_TEMPLATE_YIELDS, TemplateCheck.BOTH_LEVELS,
                           TemplateCheck.ANSWERS_REEXECUTE, "clean_tasks_contract"}
    assert all(c.passed for c in checks.values()), {n: c.metadata for n, c in checks.items() if not c.passed}
    assert {c.partition for c in checks.values()} == {Intent.LABORATORY.value}
    assert checks[TemplateCheck.ANSWERS_REEXECUTE].metadata["tasks_re_executed"].value > 0


def test_rematerializing_writes_the_same_bytes(laboratory_run, demo_paths):
    path = demo_paths.clean_tasks_dir / "laboratory.parquet"
    before = path.read_bytes()
    assert _materialize_intent(demo_paths, Intent.LABORATORY).success
    assert path.read_bytes() == before


def test_a_partition_whose_answers_do_not_re_execute_fails_with_evidence_and_keeps_its_previous_file(
        tmp_path, demo_full_db, monkeypatch):
    """A blocking check failing makes the partition's step fail: no materialization (a backfill does not go
    on downstream), the failure recorded on that partition, the previous output untouched."""
    import assets.templates.assets as templates_assets
    from pipeline.templates import extract_clean_tasks as real_extract

    paths = _paths(tmp_path, demo_full_db)
    assert _materialize_intent(paths, Intent.DIAGNOSES).success
    path = paths.clean_tasks_dir / "diagnoses.parquet"
    before = path.read_bytes()

    def tampered(*args, **kwargs):
        result = real_extract(*args, **kwargs)
        import dataclasses

        # No rows: the stored answer has no support any more.
        result.tasks[0] = dataclasses.replace(result.tasks[0], gold_sql="SELECT 'tampered' WHERE false")
        return result

    monkeypatch.setattr(templates_assets, "extract_clean_tasks", tampered)
    instance = dg.DagsterInstance.ephemeral()
    result = _materialize_intent(paths, Intent.DIAGNOSES, raise_on_error=False, instance=instance)
    assert not result.success
    assert result.asset_materializations_for_node(AssetName.CLEAN_TASKS.value) == []
    failure = result.failure_data_for_node(AssetName.CLEAN_TASKS.value)
    assert "clean_tasks[diagnoses]: blocking check(s) failed: answers_reexecute" in failure.user_failure_data.description
    evaluations = {e.check_name: e for e in check_evaluations(instance, result.run_id)}
    check = evaluations[TemplateCheck.ANSWERS_REEXECUTE]
    assert not check.passed and check.partition == Intent.DIAGNOSES.value and check.metadata["mismatches"].value == 1
    assert "1 of" in check.metadata["evidence"].value and "stored" in check.metadata["evidence"].value
    assert evaluations[TemplateCheck.IDS_UNIQUE].passed  # every check of the step is recorded, not only the failure
    assert path.read_bytes() == before
    assert sorted(p.name for p in paths.clean_tasks_dir.iterdir()) == ["diagnoses.parquet"]


def test_an_intent_the_database_cannot_serve_is_skipped_with_a_warning_not_a_crash(tmp_path, demo_db):
    paths = _paths(tmp_path, demo_db)
    result = _materialize_intent(paths, Intent.VITALS_IO)
    assert result.success
    (mat,) = result.asset_materializations_for_node(AssetName.CLEAN_TASKS.value)
    assert "chartevents" in mat.metadata["skipped"].value and mat.metadata["dagster/row_count"].value == 0
    checks = _checks(result)
    assert not checks[TemplateCheck.EVERY_TEMPLATE_YIELDS].passed
    assert checks[TemplateCheck.EVERY_TEMPLATE_YIELDS].severity is dg.AssetCheckSeverity.WARN
    # Nothing to re-execute: a warning naming the reason, not a pass and not a blocking failure.
    reexecute = checks[TemplateCheck.ANSWERS_REEXECUTE]
    assert not reexecute.passed and reexecute.severity is dg.AssetCheckSeverity.WARN
    assert "chartevents" in reexecute.metadata["evidence"].value
    assert checks["clean_tasks_contract"].severity is dg.AssetCheckSeverity.WARN
    assert pq.read_table(str(paths.clean_tasks_dir / "vitals_io.parquet")).num_rows == 0

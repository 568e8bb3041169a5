"""croissant.json validates with mlcroissant and reads the release's records back."""

import json
import logging

import polars as pl
import pytest

from pipeline.release.croissant import CONTEXT, validate_croissant
from pipeline.release.field_docs import FIELD_DESCRIPTIONS, leaf_paths
from pipeline.task_model import arrow_schema
from tests.pipeline.release.demo_tasks import demo_tasks, observed_noise_shares


@pytest.fixture(scope="module")
def release_dir(demo_db, tmp_path_factory):
    from pipeline.release import build_release

    tasks = list(demo_tasks(demo_db))
    return build_release(tasks, source_db=demo_db, version="2.0.0", releases_dir=tmp_path_factory.mktemp("rel"),
                         noise_shares=observed_noise_shares(tasks), redistributable=False,
                         config={"publication": {"url": "https://example.org/ehr-robustgym", "creator": "A Lab"}}).path


def test_every_column_down_to_the_leaves_is_described():
    paths = [p for f in arrow_schema() for p in leaf_paths(f.type, f.name)]
    assert [p for p in paths if p not in FIELD_DESCRIPTIONS] == []
    assert [p for p in FIELD_DESCRIPTIONS if p not in paths] == []


def test_mlcroissant_validates_the_file_without_errors_or_warnings(release_dir, caplog):
    import mlcroissant as mlc

    with caplog.at_level(logging.WARNING):
        dataset = mlc.Dataset(jsonld=str(release_dir / "croissant.json"))
    assert dataset.metadata.ctx.issues.errors == set()
    assert dataset.metadata.ctx.issues.warnings == set()
    assert [r.getMessage() for r in caplog.records if "croissant" in r.name or "absl" in r.name] == []
    assert validate_croissant(release_dir / "croissant.json") == []


def test_mlcroissant_reads_every_task_with_its_nested_fields(release_dir):
    import mlcroissant as mlc

    records = list(mlc.Dataset(jsonld=str(release_dir / "croissant.json")).records("tasks"))
    frame = pl.read_parquet(release_dir / "tasks" / "*.parquet")
    assert len(records) == frame.height
    by_id = {r["tasks/task_id"].decode(): r for r in records}
    twin = frame.filter(pl.col("noise_type") == "missing_evidence").row(0, named=True)
    record = by_id[twin["task_id"]]
    # mlcroissant keys values two levels deep under their parent at the top of the record.
    assert [h["tasks/patch/hide/row_id"] for h in record["tasks/patch/hide"]] == \
        [h["row_id"] for h in twin["patch"]["hide"]]
    assert [h["tasks/patch/hide/table"].decode() for h in record["tasks/patch/hide"]] == \
        [h["table"] for h in twin["patch"]["hide"]]
    assert record["tasks/proof"]["tasks/proof/passed"] is True
    added = frame.filter(pl.col("noise_type") == "conflicting_duplicate").row(0, named=True)
    assert [a["tasks/patch/add/row_id"] for a in by_id[added["task_id"]]["tasks/patch/add"]] == [-1]
    clean = frame.filter((pl.col("variant") == "clean") & (pl.col("answer_type") == "number")).row(0, named=True)
    outcomes = by_id[clean["task_id"]]["tasks/accepted_outcomes/answer"]["tasks/accepted_outcomes/answer/number"]
    assert outcomes == [o["answer"]["number"] for o in clean["accepted_outcomes"]] == [clean["answer"]["number"]]


def test_the_context_is_the_official_croissant_1_0_context(release_dir):
    document = json.loads((release_dir / "croissant.json").read_text())
    assert document["@context"] == CONTEXT
    assert document["conformsTo"] == "http://mlcommons.org/croissant/1.0"
    assert {d["contentUrl"] for d in document["distribution"] if "contentUrl" in d} == {
        "tasks/train.parquet", "tasks/validation.parquet", "tasks/test.parquet"}


def test_a_broken_document_is_reported(release_dir, tmp_path):
    document = json.loads((release_dir / "croissant.json").read_text())
    tasks = next(r for r in document["recordSet"] if r["@id"] == "tasks")
    tasks["field"][0]["source"]["fileSet"]["@id"] = "no-such-files"
    path = tmp_path / "croissant.json"
    path.write_text(json.dumps(document))
    assert validate_croissant(path)


def test_the_document_names_its_creator_keywords_citation_and_configured_url(release_dir):
    document = json.loads((release_dir / "croissant.json").read_text())
    assert document["creator"] == {"@type": "sc:Organization", "name": "A Lab", "url": "https://example.org/ehr-robustgym"}
    assert document["url"] == "https://example.org/ehr-robustgym"
    assert "MIMIC-IV" in document["keywords"] and "robustness" in document["keywords"]
    assert document["citeAs"].startswith("@misc{ehrrobustgym_2_0_0,") and "version = {2.0.0}" in document["citeAs"]
    assert "10.13026/dp1f-ex47" in document["citation"]  # the demo, which the release is derived from


def test_the_splits_are_a_croissant_split_record_set_the_tasks_reference(release_dir):
    import mlcroissant as mlc

    document = json.loads((release_dir / "croissant.json").read_text())
    splits = next(r for r in document["recordSet"] if r["@id"] == "splits")
    assert splits["dataType"] == "cr:Split"
    assert splits["data"] == [{"splits/name": "train", "splits/url": "cr:TrainingSplit"},
                              {"splits/name": "validation", "splits/url": "cr:ValidationSplit"},
                              {"splits/name": "test", "splits/url": "cr:TestSplit"}]
    tasks = next(r for r in document["recordSet"] if r["@id"] == "tasks")
    split_field = next(f for f in tasks["field"] if f["@id"] == "tasks/split")
    assert split_field["references"] == {"field": {"@id": "splits/name"}}
    records = list(mlc.Dataset(jsonld=str(release_dir / "croissant.json")).records("splits"))
    assert [r["splits/name"] for r in records] == ["train", "validation", "test"]


def test_the_responsible_ai_fields_that_apply_are_filled_and_read_by_mlcroissant(release_dir):
    import mlcroissant as mlc

    metadata = mlc.Dataset(jsonld=str(release_dir / "croissant.json")).metadata
    assert "No data was collected" in metadata.data_collection
    assert metadata.data_collection_type == ["Secondary Data Analysis"]
    assert any("clinical decision-making" in x for x in metadata.data_limitations)
    assert metadata.data_use_cases and metadata.data_biases and metadata.personal_sensitive_information
    assert "immutable" in metadata.data_release_maintenance_plan


def test_without_a_configured_url_the_document_states_none(release_dir, tmp_path):
    from pipeline.release.base_database import TERMS
    from pipeline.release.croissant import build_croissant, write_croissant

    manifest = json.loads((release_dir / "manifest.json").read_text())
    manifest["config"].pop("publication")
    document = build_croissant(manifest, TERMS["synthetic"], FIELD_DESCRIPTIONS)
    assert "url" not in document and "url" not in document["creator"]
    assert document["creator"]["name"] == "EHR-RobustGym contributors"
    assert "citation" not in document  # the synthetic source has nothing to cite
    assert "github.com" not in json.dumps(document)
    path = write_croissant(tmp_path, document)
    (tmp_path / "tasks").symlink_to(release_dir / "tasks")
    assert validate_croissant(path) == []


def test_logging_reconfigured_after_a_validation_closes_no_stream_the_caller_lent(release_dir):
    """absl keeps the sys.stderr of its import and closes it when logging is reconfigured, as each
    Dagster run does: a test's captured output, say, would be closed under pytest."""
    import io
    import logging.config

    from absl import logging as absl_logging

    lent = io.StringIO()
    # as if absl had been imported while `lent` was sys.stderr
    absl_logging.get_absl_handler().python_handler.stream = lent
    assert validate_croissant(release_dir / "croissant.json") == []
    logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
    assert not lent.closed

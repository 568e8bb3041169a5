"""The release group in Dagster: contracts as blocking checks with evidence, publishing, automation.

The stage outputs the release reads (clean task files, twin files, the source database) are real:
tasks built and executed on the MIMIC-IV demo (tests/pipeline/release/demo_tasks.py).
"""

import json
import os

import dagster as dg
import pyarrow as pa
import pytest

import assets.release.assets as release_assets
from assets import noise as noise_stage
from assets import release as release_stage
from assets import source as source_stage
from assets import templates as templates_stage
from assets.automation import ALLOW_MISSING_ENV, MIMIC_DIRS_ENV, mimic_source_changed, release_schedule
from assets.noise.checks import noise_contracts
from assets.release.assets import CONTRACT_CHECKS, contract_check_name
from assets.release.checks import ReleaseCheck
from assets.release.rebuild import check_evaluations, run_graph
from assets.resources import ProjectPaths
from assets.source.checks import source_tables_contract
from assets.templates.checks import clean_tasks_contract
from pipeline.contracts import split_by_variant
from pipeline.release import latest_version
from pipeline.release.task_files import tasks_table
from pipeline.task_model import arrow_schema
from pipeline.vocabulary import AssetName, Intent
from tests.pipeline.release.breakers import BREAKS
from tests.pipeline.release.demo_tasks import demo_tasks, observed_noise_shares

# The release assets with every stage's checks: each test selects the check it exercises.
EVERYTHING = [*release_stage.ASSETS, *source_stage.CHECKS, *templates_stage.CHECKS, *noise_stage.CHECKS,
              *release_stage.CHECKS]


@pytest.fixture(scope="module")
def table(demo_db):
    return tasks_table(demo_tasks(demo_db))


def _stage_outputs(table: pa.Table, demo_db, root) -> ProjectPaths:
    """Write clean tasks per intent and twins the way the upstream stages do, under ``root``."""
    paths = ProjectPaths(data_dir=str(root / "data"), releases_dir=str(root / "releases"))
    paths.data.mkdir(parents=True)
    paths.source_db.symlink_to(demo_db)
    clean, twins = split_by_variant(table)
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    for intent in Intent:
        part = clean.filter(pc.equal(clean.column("intent"), intent.value)) if "intent" in clean.column_names else clean
        paths.clean_tasks_dir.mkdir(parents=True, exist_ok=True)
        pq.write_table(part, str(paths.clean_tasks_dir / f"{intent.value}.parquet"))
    paths.noise_dir.mkdir(parents=True)
    pq.write_table(twins, str(paths.noise_dir / "twins.parquet"))
    return paths


def _run(paths: ProjectPaths, shares, selection=None, **config) -> dg.ExecuteInProcessResult:
    run_config = {"ops": {AssetName.RELEASE_CANDIDATE.value: {"config": {"noise_type_shares": shares}}}}
    if config:
        run_config["ops"][AssetName.RELEASE.value] = {"config": config}
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(EVERYTHING, selection=selection or dg.AssetSelection.groups("release"),
                            resources={"paths": paths}, run_config=run_config, raise_on_error=False, instance=instance)
    _INSTANCES[result.run_id] = instance
    return result


_INSTANCES: dict[str, dg.DagsterInstance] = {}  # run id -> the instance that recorded it


def _evaluations(result) -> dict:
    """Every check evaluation of the run, also those recorded by a step that then failed."""
    return {e.check_name: e for e in check_evaluations(_INSTANCES[result.run_id], result.run_id)}


def _published(paths: ProjectPaths) -> list[str]:
    return sorted(p.name for p in paths.releases.iterdir()) if paths.releases.exists() else []


@pytest.fixture(scope="module")
def good_run(table, demo_db, tmp_path_factory):
    paths = _stage_outputs(table, demo_db, tmp_path_factory.mktemp("good"))
    return paths, _run(paths, observed_noise_shares(demo_tasks(demo_db)), version="1.0.0",
                       url="https://example.org/robustgym", creator="A Lab")


def test_the_release_group_publishes_a_validated_release(good_run):
    paths, result = good_run
    assert result.success
    checks = _evaluations(result)
    assert {c: checks[c].passed for c in [*CONTRACT_CHECKS, ReleaseCheck.READS_BACK]} == \
        dict.fromkeys([*CONTRACT_CHECKS, ReleaseCheck.READS_BACK], True)
    assert latest_version(paths.releases) == "1.0.0"
    manifest = json.loads((paths.releases / "1.0.0" / "manifest.json").read_text())
    materialized = {m.asset_key.to_user_string(): m for m in result.get_asset_materialization_events()}
    meta = materialized["release"].materialization.metadata
    assert meta["version"].value == "1.0.0" and meta["dagster/row_count"].value == manifest["counts"]["total"]
    assert [c.name for c in meta["dagster/column_schema"].schema.columns][:3] == ["task_id", "clean_task_id", "variant"]
    # Where it is published is release config, stated in croissant.json and the card, never made up.
    croissant = json.loads((paths.releases / "1.0.0" / "croissant.json").read_text())
    assert croissant["url"] == "https://example.org/robustgym" and croissant["creator"]["name"] == "A Lab"
    assert manifest["config"]["publication"] == {"url": "https://example.org/robustgym", "creator": "A Lab"}


def test_contract_checks_report_every_expectation_with_its_result(good_run):
    _, result = good_run
    meta = _evaluations(result)[contract_check_name("clean_tasks")].metadata
    assert meta["critical_failures"].value == 0
    table_md = meta["results"].value
    assert "| clean_tasks | coverage | expect_column_values_to_be_between | n_tasks | critical |" in table_md


def _broken_run(paths, shares, failing_contract: str, column: str) -> tuple[dg.ExecuteInProcessResult, object]:
    result = _run(paths, shares, version="1.0.0")
    assert not result.success, "a broken candidate must fail the run"
    evaluation = _evaluations(result)[contract_check_name(failing_contract)]
    assert not evaluation.passed and evaluation.severity is dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["critical_failures"].value >= 1
    failures = evaluation.metadata["failures"].value
    assert f"| {failing_contract} |" in failures and f"| {column} | critical |" in failures, failures
    assert "release" not in {m.asset_key.to_user_string() for m in result.get_asset_materialization_events()}
    assert _published(paths) == []
    assert not (paths.data / "release_candidate").exists()
    return result, evaluation


@pytest.mark.parametrize("brk", BREAKS, ids=[b.name for b in BREAKS])
def test_each_broken_contract_fails_the_run_with_evidence_and_publishes_nothing(brk, table, demo_db, tmp_path,
                                                                             monkeypatch):
    shares = observed_noise_shares(demo_tasks(demo_db))
    if brk.name == "clean_without_twin":
        # The release leaves clean tasks without twins out; the contract guards that step.
        monkeypatch.setattr(release_assets, "collect_pairs", _collect_without_dropping)
    paths = _stage_outputs(brk.breaker(table), demo_db, tmp_path)
    _, evaluation = _broken_run(paths, shares, brk.contract, brk.column)
    assert f"{brk.column}" in evaluation.metadata["failures"].value


def _collect_without_dropping(clean_dir, noise_dir):
    from pipeline.release.assembly import PairSet, collect_pairs

    kept = collect_pairs(clean_dir, noise_dir)
    clean = pa.concat_tables([pa.Table.from_pylist(
        [r for d in clean_dir.glob("*.parquet") for r in pa.parquet.read_table(d).to_pylist()
         if r["task_id"] in kept.unpaired], schema=arrow_schema()), kept.clean])
    return PairSet(clean, kept.twins, ())


def _leaky_splits(kind: str):
    from pipeline.release.splits import with_splits

    def assign(table, **kwargs):
        out = with_splits(table, **kwargs)
        rows = out.select(["task_id", "clean_task_id", "subject_id", "variant", "split"]).to_pylist()
        if kind == "patient":
            from collections import Counter

            per_subject = Counter(r["subject_id"] for r in rows
                                  if r["subject_id"] is not None and r["variant"] == "clean")
            subject = next(s for s, n in sorted(per_subject.items()) if n >= 2)
            first = next(r["task_id"] for r in rows if r["subject_id"] == subject and r["variant"] == "clean")
            moved = {r["task_id"] for r in rows if first in (r["task_id"], r["clean_task_id"])}
            other = {r["split"] for r in rows if r["subject_id"] == subject and r["task_id"] not in moved}
        else:
            twin = next(r for r in rows if r["variant"] == "noise")
            moved, other = {twin["task_id"]}, {twin["split"]}
        target = next(s for s in ("train", "validation", "test") if s not in other)
        splits = [target if r["task_id"] in moved else r["split"] for r in rows]
        return out.set_column(out.schema.get_field_index("split"), "split", pa.array(splits, pa.string()))

    return assign


@pytest.mark.parametrize("kind, frame", [("patient", "patient_splits"), ("pair", "pair_splits")])
def test_a_leaking_split_fails_the_run_with_evidence_and_publishes_nothing(kind, frame, table, demo_db, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr(release_assets, "with_splits", _leaky_splits(kind))
    paths = _stage_outputs(table, demo_db, tmp_path)
    _, evaluation = _broken_run(paths, observed_noise_shares(demo_tasks(demo_db)), "release_splits", "n_splits")
    assert f"| release_splits | {frame} |" in evaluation.metadata["failures"].value


def test_the_source_table_check_names_a_broken_column(demo_db, tmp_path):
    import duckdb

    db = tmp_path / "source.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute(f"ATTACH '{demo_db}' AS demo (READ_ONLY)")
        for name in ("patients", "admissions", "_robustgym_meta"):
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM demo.{name}")
        con.execute("ALTER TABLE admissions ALTER hadm_id TYPE VARCHAR")
    evaluation = source_tables_contract(db)
    assert not evaluation.passed and evaluation.severity is dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["tables_failing"].value == "admissions"
    assert "hadm_id" in evaluation.metadata["failures"].value and "VARCHAR" in evaluation.metadata["failures"].value
    assert "admissions" in evaluation.metadata["evidence"].value


@pytest.mark.parametrize("broken", [False, True])
def test_the_clean_tasks_contract_names_the_broken_answer(broken, table, demo_db):
    answer_break = next(b for b in BREAKS if b.name == "answer_not_parsing")
    clean, _ = split_by_variant(answer_break.breaker(table) if broken else table)
    fingerprint = _fingerprint(demo_db)
    intents = sorted(set(clean.column("intent").to_pylist()))
    import pyarrow.compute as pc

    for intent in intents:
        part = clean.filter(pc.equal(clean.column("intent"), intent))
        evaluation = clean_tasks_contract(part, fingerprint, intent, None)
        if not broken or "| answer_problem |" not in evaluation.metadata["failures"].value:
            continue
        assert evaluation.severity is dg.AssetCheckSeverity.ERROR and not evaluation.passed
        assert "| clean_tasks | tasks | expect_column_values_to_be_null | answer_problem | critical | 1 |" in \
            evaluation.metadata["failures"].value
        assert "answer_problem" in evaluation.metadata["evidence"].value
        return
    assert not broken, "the broken answer was not reported by any intent's contract"


def _fingerprint(db) -> str:
    import duckdb

    from pipeline.source_db import read_source_info

    with duckdb.connect(str(db), read_only=True) as con:
        return read_source_info(con).fingerprint


@pytest.mark.parametrize("broken", [False, True])
def test_the_noise_contracts_name_a_twin_without_proof(broken, table, demo_db):
    proof_break = next(b for b in BREAKS if b.name == "proof_missing")
    clean, twins = split_by_variant(proof_break.breaker(table) if broken else table)
    evaluations = {e.check_name: e for e in noise_contracts(twins, clean, _fingerprint(demo_db))}
    assert evaluations["pairs_contract"].passed
    result = evaluations["noisy_twins_contract"]
    assert result.passed is not broken
    if broken:
        assert "| noisy_twins | tasks | expect_column_values_to_be_null | proof_problem | critical | 1 |" in \
            result.metadata["failures"].value


def test_the_graph_runner_stops_at_a_failed_blocking_check(table, demo_db, tmp_path):
    paths = _stage_outputs(BREAKS[-1].breaker(table), demo_db, tmp_path)  # a twin without proof
    defs = dg.Definitions(assets=release_stage.ASSETS, asset_checks=release_stage.CHECKS,
                          resources={"paths": paths})
    messages = []
    run = run_graph(defs, settings={"seed": 0, "version": "1.0.0",
                                    "noise_type_shares": observed_noise_shares(demo_tasks(demo_db))},
                    progress=messages.append)
    assert [s.label for s in run.steps] == ["release_candidate"] and not run.success
    assert {c.check for c in run.failed.failed_checks} >= {contract_check_name("noisy_twins")}
    assert any("release_candidate FAILED" in m for m in messages)
    assert _published(paths) == []


# --------------------------------------------------------------------------------- automation

def test_the_schedule_is_weekly_by_default_and_configurable():
    assert release_schedule().cron_schedule == "0 4 * * 1"
    assert release_schedule("0 2 * * *", name="nightly").cron_schedule == "0 2 * * *"


def test_the_schedule_refreshes_from_the_configured_mimic_source_or_the_synthetic_one(monkeypatch, tmp_path):
    schedule = release_schedule()
    monkeypatch.delenv(MIMIC_DIRS_ENV, raising=False)
    request = schedule.evaluate_tick(dg.build_schedule_context()).run_requests[0]
    assert request.run_config["ops"]["source_database"]["config"] == {"kind": "synthetic"}
    monkeypatch.setenv(MIMIC_DIRS_ENV, str(tmp_path))
    request = schedule.evaluate_tick(dg.build_schedule_context()).run_requests[0]
    assert request.run_config["ops"]["source_database"]["config"] == {"kind": "mimic_iv",
                                                                      "mimic_dirs": [str(tmp_path)]}


def test_an_unattended_refresh_may_load_a_source_that_lacks_tables_when_told_so(monkeypatch, tmp_path):
    """The demo ships 30 of 31 tables: without the switch its refresh would fail on the missing one."""
    monkeypatch.setenv(MIMIC_DIRS_ENV, str(tmp_path))
    monkeypatch.setenv(ALLOW_MISSING_ENV, "1")
    request = release_schedule().evaluate_tick(dg.build_schedule_context()).run_requests[0]
    assert request.run_config["ops"]["source_database"]["config"] == {
        "kind": "mimic_iv", "mimic_dirs": [str(tmp_path)], "allow_missing": True}
    monkeypatch.setenv(ALLOW_MISSING_ENV, "0")
    request = release_schedule().evaluate_tick(dg.build_schedule_context()).run_requests[0]
    assert "allow_missing" not in request.run_config["ops"]["source_database"]["config"]


def test_the_sensor_starts_a_rebuild_when_the_source_changes_and_only_then(monkeypatch, demo_dir, tmp_path):
    monkeypatch.delenv(MIMIC_DIRS_ENV, raising=False)
    assert isinstance(mimic_source_changed(dg.build_sensor_context()), dg.SkipReason)

    source = tmp_path / "mimic"
    for module in ("hosp", "icu"):
        (source / module).mkdir(parents=True)
        for f in (demo_dir / module).glob("*.csv.gz"):
            (source / module / f.name).symlink_to(f)
    monkeypatch.setenv(MIMIC_DIRS_ENV, str(source))
    first = mimic_source_changed(dg.build_sensor_context())
    assert isinstance(first, dg.RunRequest)
    assert first.run_config["ops"]["source_database"]["config"] == {"kind": "mimic_iv", "mimic_dirs": [str(source)]}
    context = dg.build_sensor_context(cursor=first.run_key)
    assert isinstance(mimic_source_changed(context), dg.SkipReason)
    extra = source / "hosp" / "patients.csv.gz"
    extra.unlink()
    extra.write_bytes((demo_dir / "hosp" / "patients.csv.gz").read_bytes())
    os.utime(extra, ns=(1, 1))
    again = mimic_source_changed(dg.build_sensor_context(cursor=first.run_key))
    assert isinstance(again, dg.RunRequest) and again.run_key != first.run_key


def test_the_release_stage_wiring_is_what_review_expects():
    """A rename of an asset, check, job, schedule or sensor shows up here."""
    assets = {k.to_user_string(): a.group_names_by_key[k] for a in release_stage.ASSETS for k in a.keys}
    checks = sorted(f"{k.asset_key.to_user_string()}.{k.name}" for a in [*release_stage.ASSETS, *release_stage.CHECKS]
                    for k in a.check_keys)
    blocking = {f"{s.asset_key.to_user_string()}.{s.name}": s.blocking for a in [*release_stage.ASSETS,
                                                                                   *release_stage.CHECKS]
                for s in a.check_specs}
    assert assets == {"release_candidate": "release", "release": "release"}
    assert checks == [
        "release.release_reads_back", "release_candidate.clean_tasks_contract",
        "release_candidate.noisy_twins_contract", "release_candidate.pairs_contract",
        "release_candidate.release_splits_contract"]
    assert [k for k, b in blocking.items() if not b] == ["release.release_reads_back"]


def test_each_upstream_contract_check_sits_in_the_stage_of_the_asset_it_guards_and_blocks():
    placed = {f"{s.asset_key.to_user_string()}.{s.name}": (stage, s.blocking)
              for stage, module in (("source", source_stage), ("templates", templates_stage), ("noise", noise_stage))
              for a in [*module.ASSETS, *module.CHECKS] for s in a.check_specs if s.name.endswith("_contract")}
    assert placed == {
        "source_database.source_tables_contract": ("source", True),
        "clean_tasks.clean_tasks_contract": ("templates", True),
        "noise_pairs.noisy_twins_contract": ("noise", True),
        "noise_pairs.pairs_contract": ("noise", True)}

"""The task contracts pass on real tasks and block, with evidence naming the failure, on broken ones."""

from collections import Counter

import pyarrow as pa
import pytest

from pipeline.contracts import (
    Severity,
    check_clean_tasks,
    check_noisy_twins,
    check_pairs,
    check_release_splits,
    check_task_set,
    split_by_variant,
)
from pipeline.release.splits import assign_splits
from pipeline.release.task_files import tasks_table
from pipeline.source_db import read_source_info
from pipeline.task_model import arrow_schema
from pipeline.vocabulary import Split
from tests.pipeline.release.breakers import BREAKS
from tests.pipeline.release.demo_tasks import demo_tasks, observed_noise_shares


@pytest.fixture(scope="module")
def tasks(demo_db):
    return demo_tasks(demo_db)


@pytest.fixture(scope="module")
def fingerprint(demo_db):
    import duckdb

    with duckdb.connect(str(demo_db), read_only=True) as con:
        return read_source_info(con).fingerprint


@pytest.fixture(scope="module")
def table(tasks):
    return tasks_table(tasks)


def _run(table, fingerprint, shares):
    return {r.contract: r for r in check_task_set(table, source_fingerprint=fingerprint, noise_shares=shares)}


def _run_one(contract, table, fingerprint, shares):
    """Only the contract under test: each run costs Great Expectations time."""
    clean, twins = split_by_variant(table)
    if contract == "clean_tasks":
        return check_clean_tasks(clean, source_fingerprint=fingerprint)
    if contract == "noisy_twins":
        return check_noisy_twins(twins, source_fingerprint=fingerprint, noise_shares=shares)
    return check_pairs(clean, twins)


def test_real_tasks_meet_every_task_contract(table, tasks, fingerprint):
    results = _run(table, fingerprint, observed_noise_shares(tasks))
    assert set(results) == {"clean_tasks", "noisy_twins", "pairs"}
    assert [f.describe() for r in results.values() for f in r.failures] == []


def test_polars_frames_are_validated_like_arrow_tables(table, tasks, fingerprint):
    import polars as pl

    result = _run_one("noisy_twins", pl.from_arrow(table), fingerprint, observed_noise_shares(tasks))
    assert result.passed and result.failures == ()


@pytest.mark.parametrize("brk", BREAKS, ids=[b.name for b in BREAKS])
def test_each_broken_rule_fails_a_critical_expectation_naming_it(brk, table, tasks, fingerprint):
    result = _run_one(brk.contract, brk.breaker(table), fingerprint, observed_noise_shares(tasks))
    assert not result.passed
    hits = [f for f in result.blocking_failures if f.column == brk.column]
    assert hits, f"{brk.name}: no critical failure on {brk.column}; got {[f.describe() for f in result.failures]}"
    assert any(brk.evidence(table, f.examples) for f in hits), [f.describe() for f in hits]


def test_a_task_built_on_another_database_is_refused(table, fingerprint, tasks):
    result = _run_one("clean_tasks", table, "another-fingerprint", None)
    failure = next(f for f in result.blocking_failures if f.column == "base_fingerprint")
    assert failure.examples[0]["base_fingerprint"] == fingerprint


def test_a_twin_whose_expected_status_is_answered_is_refused(table, fingerprint, tasks):
    rows = table.to_pylist()
    twin = next(r for r in rows if r["variant"] == "noise")
    twin["expected_status"] = "answered"
    result = _run_one("noisy_twins", pa.Table.from_pylist(rows, schema=arrow_schema()), fingerprint,
                      observed_noise_shares(tasks))
    failures = {f.column for f in result.blocking_failures}
    # Also not among its accepted outcomes, which the outcomes rule reports.
    assert failures == {"expected_status", "outcomes_problem"}


def test_a_missing_evidence_list_is_only_a_warning(table, fingerprint, tasks):
    rows = table.to_pylist()
    clean = next(r for r in rows if r["variant"] == "clean")
    clean["evidence"] = []
    result = _run_one("clean_tasks", pa.Table.from_pylist(rows, schema=arrow_schema()), fingerprint, None)
    assert result.passed
    (warning,) = result.failures
    assert warning.severity is Severity.WARNING and warning.column == "n_evidence"
    assert warning.examples == ({"n_evidence": 0, "task_id": clean["task_id"]},)


# ------------------------------------------------------------------------------------- splits

@pytest.fixture(scope="module")
def split_files(tasks):
    assigned = assign_splits(list(tasks), seed=0)
    return {s.value: tasks_table([t for t in assigned if t.split is s]) for s in Split}


def _move(files: dict, task_ids: set, to: str) -> dict:
    """Move rows to another split file (with their split field), as a buggy splitter would."""
    out = {}
    moved = []
    for split, t in files.items():
        rows = t.to_pylist()
        moved += [{**r, "split": to} for r in rows if r["task_id"] in task_ids]
        out[split] = [r for r in rows if r["task_id"] not in task_ids]
    out[to] += moved
    return {s: pa.Table.from_pylist(rows, schema=arrow_schema()) for s, rows in out.items()}


def test_real_splits_meet_the_split_contract(split_files):
    result = check_release_splits(split_files)
    assert [f.describe() for f in result.failures] == []


def test_a_patient_in_two_splits_blocks_and_is_named(split_files):
    rows = split_files["train"].to_pylist()
    pairs_of = Counter(r["subject_id"] for r in rows if r["level"] == "patient" and r["variant"] == "clean")
    # A patient with two pairs: moving one of them splits the patient.
    clean = next(r for r in rows if r["level"] == "patient" and r["variant"] == "clean" and pairs_of[r["subject_id"]] > 1)
    pair = {r["task_id"] for r in rows if clean["task_id"] in (r["task_id"], r["clean_task_id"])}
    result = check_release_splits(_move(split_files, pair, "test"))
    (failure,) = result.blocking_failures
    assert failure.column == "n_splits" and failure.frame == "patient_splits"
    assert failure.examples == ({"subject_id": clean["subject_id"], "n_splits": 2},)


def test_a_clean_task_and_its_twin_in_different_splits_block(split_files):
    rows = split_files["train"].to_pylist()
    twin = next(r for r in rows if r["variant"] == "noise" and r["level"] == "population")
    result = check_release_splits(_move(split_files, {twin["task_id"]}, "validation"))
    frames = {f.frame: f for f in result.blocking_failures}
    assert frames["pair_splits"].examples == ({"clean_task_id": twin["clean_task_id"], "n_splits": 2},)


def test_a_row_filed_under_the_wrong_split_and_a_missing_column_block(split_files):
    files = dict(split_files)
    rows = files["test"].to_pylist()
    rows[0]["split"] = "train"
    files["test"] = pa.Table.from_pylist(rows, schema=arrow_schema())
    files["validation"] = files["validation"].drop_columns(["proof"])
    failures = {(f.frame, f.column): f for f in check_release_splits(files).blocking_failures}
    assert failures[("tasks", "split_problem")].examples[0]["task_id"] == rows[0]["task_id"]
    assert failures[("column_files", "n_files")].examples == ({"column": "proof", "n_files": 2},)


def test_split_by_variant_sends_unknown_variants_to_the_twins_contract(table):
    rows = table.to_pylist()
    rows[0]["variant"] = "dirty"
    clean, twins = split_by_variant(pa.Table.from_pylist(rows, schema=arrow_schema()))
    assert clean.num_rows + twins.num_rows == table.num_rows
    assert "dirty" in twins.column("variant").to_pylist()


def test_list_lengths_count_a_missing_list_as_none_and_a_mistyped_column_is_left_out(table):
    from pipeline.contracts.task_frames import tasks_frame

    evidence = table.schema.get_field_index("evidence")
    nulled = table.set_column(evidence, "evidence", pa.nulls(table.num_rows, table.schema.field("evidence").type))
    assert set(tasks_frame(nulled).column("n_evidence").to_pylist()) == {0}
    counted = tasks_frame(table).column("n_evidence").to_pylist()
    assert counted == [len(e or []) for e in table.column("evidence").to_pylist()] and max(counted) > 1
    as_text = table.set_column(evidence, "evidence", pa.array(["[]"] * table.num_rows))
    frame = tasks_frame(as_text)  # a schema break is the columns frame's to report, not a crash
    assert "n_evidence" not in frame.column_names and "n_accepted_outcomes" in frame.column_names

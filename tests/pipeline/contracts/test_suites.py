"""The suites in data_contracts/ are valid Great Expectations suites that cannot drift from the code."""

import json

import pytest

from pipeline.contracts.results import Severity
from pipeline.contracts.source_suites import generate_source_suites, main, stale_files, write_source_suites
from pipeline.contracts.suites import CONTRACTS_DIR, check_suite, dump_suite, load_suite
from pipeline.contracts.task_checks import Contract
from pipeline.contracts.task_frames import expected_task_columns
from pipeline.schema import TABLES
from pipeline.vocabulary import NOISE_LEVEL_OF, AnswerType, Intent, Level, NoiseLevel, NoiseType, Split, Status

ALL_SUITES = sorted(p.relative_to(CONTRACTS_DIR).with_suffix("").as_posix() for p in CONTRACTS_DIR.rglob("*.json"))


def test_committed_source_suites_equal_what_the_schema_generates():
    assert stale_files() == []


def test_there_is_one_source_suite_per_schema_table_and_one_per_task_contract():
    assert {f"source/{t.name}" for t in TABLES} | {c.value for c in Contract} == set(ALL_SUITES)


def test_stale_check_reports_an_edited_and_an_extra_suite(tmp_path):
    write_source_suites(tmp_path)
    edited = tmp_path / "source" / "patients.json"
    edited.write_text(edited.read_text().replace('"gender"', '"sex"'))
    (tmp_path / "source" / "patient_notes.json").write_text("{}")
    problems = stale_files(tmp_path)
    assert any("patients.json" in p and "differs" in p for p in problems)
    assert any("patient_notes.json" in p and "no such table" in p for p in problems)
    assert main(["--check", "--dir", str(tmp_path)]) == 1
    assert main(["--write", "--dir", str(tmp_path)]) == 0
    assert stale_files(tmp_path) == []


def test_generation_declares_not_null_columns_and_keys_from_the_schema():
    suite = generate_source_suites()["source/admissions"]
    null_checks = {e["kwargs"]["column"] for e in suite["expectations"] if e["kwargs"].get("column", "").startswith("nulls__")}
    declared = {f"nulls__{c.name}" for t in TABLES if t.name == "admissions" for c in t.columns if not c.nullable}
    assert null_checks == declared and "nulls__hadm_id" in null_checks


@pytest.mark.parametrize("name", ALL_SUITES)
def test_every_suite_loads_into_great_expectations_with_a_severity_per_expectation(name):
    from great_expectations.core.expectation_suite import ExpectationSuite

    suite = load_suite(name)
    ge = ExpectationSuite(name=suite["name"], expectations=suite["expectations"], meta=suite["meta"])
    assert len(ge.expectations) == len(suite["expectations"]) > 0
    for exp, loaded in zip(suite["expectations"], ge.expectations):
        assert Severity(exp["meta"]["severity"]).value == loaded.severity.value


def test_a_suite_without_severity_or_with_disagreeing_severities_is_rejected():
    suite = json.loads(dump_suite(load_suite("pairs")))
    del suite["expectations"][0]["meta"]["severity"]
    with pytest.raises(ValueError, match="expectation 0.*meta.severity"):
        check_suite(suite, "pairs.json")
    suite = load_suite("pairs")
    suite["expectations"][1]["severity"] = "warning"
    with pytest.raises(ValueError, match="disagrees"):
        check_suite(suite, "pairs.json")
    suite = load_suite("pairs")
    suite["expectations"][2]["meta"]["frame"] = "nowhere"
    with pytest.raises(ValueError, match="not one of the suite's frames"):
        check_suite(suite, "pairs.json")


def _value_sets(suite: dict, column: str, type_: str = "expect_column_values_to_be_in_set") -> list[list]:
    return [e["kwargs"]["value_set"] for e in suite["expectations"]
            if e["type"] == type_ and e["kwargs"].get("column") == column]


VOCABULARIES = {"intent": Intent, "level": Level, "answer_type": AnswerType, "noise_level": NoiseLevel,
                "noise_type": NoiseType, "split": Split}


@pytest.mark.parametrize("contract", [c.value for c in Contract])
def test_vocabulary_sets_in_task_suites_equal_the_vocabulary(contract):
    suite = load_suite(contract)
    for column, enum in VOCABULARIES.items():
        for values in _value_sets(suite, column):
            assert sorted(values) == sorted(e.value for e in enum), (contract, column)
    statuses = _value_sets(suite, "expected_status")
    if statuses:
        assert sorted(e.value for e in Status) in [sorted(v) for v in statuses]


@pytest.mark.parametrize("contract", [c.value for c in Contract])
def test_task_columns_and_noise_levels_in_suites_equal_the_task_model(contract):
    suite = load_suite(contract)
    for e in suite["expectations"]:
        kw = e["kwargs"]
        if kw.get("column_A") == "column":
            assert [tuple(p) for p in kw["value_pairs_set"]] == expected_task_columns()
        if kw.get("column_A") == "noise_type":
            assert {tuple(p) for p in kw["value_pairs_set"]} == {(t.value, lv.value) for t, lv in NOISE_LEVEL_OF.items()}
        if e["type"] == "expect_column_distinct_values_to_contain_set" and kw["column"] == "column":
            assert kw["value_set"] == [c for c, _ in expected_task_columns()]

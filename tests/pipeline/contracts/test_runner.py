"""The contract engine is imported when a contract first runs, not when the pipeline is imported."""

import subprocess
import sys

IMPORT_LAZILY = """
import sys
import pipeline.contracts.runner, assets.definitions
assert "great_expectations" not in sys.modules  # seconds saved for every command that runs no contract
"""


def test_great_expectations_is_not_imported_with_the_pipeline_or_the_definitions():
    # A fresh interpreter: this session may have imported Great Expectations already.
    done = subprocess.run([sys.executable, "-c", IMPORT_LAZILY], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def _mixed_suite() -> dict:
    from pipeline.contracts import Severity
    from pipeline.contracts.suites import expectation

    critical, warning = Severity.CRITICAL, Severity.WARNING
    return {
        "name": "screening", "notes": None,
        "meta": {"frames": {"rows": {"index": "task_id", "description": "one row per task"}}},
        "expectations": [
            expectation("expect_column_values_to_be_between", critical, "rows", "passes", column="n", min_value=0),
            expectation("expect_column_values_to_be_between", critical, "rows", "two rows below 3", column="n",
                        min_value=3),
            expectation("expect_column_values_to_be_in_set", warning, "rows", "one unknown kind", column="kind",
                        value_set=["a", "b"]),
            expectation("expect_table_row_count_to_be_between", critical, "rows", "passes, observed",
                        min_value=1),
            expectation("expect_column_distinct_values_to_contain_set", critical, "rows", "'z' is missing",
                        column="kind", value_set=["a", "z"]),
            expectation("expect_column_values_to_not_be_null", critical, "rows", "no such column", column="gone"),
        ],
    }


def test_screening_gives_the_results_a_complete_run_gives_with_failures_evidence():
    import pyarrow as pa

    from pipeline.contracts.runner import validate_frames

    frame = pa.table({"task_id": ["t1", "t2", "t3", "t4"], "n": [1, 2, 5, 8], "kind": ["a", "b", "c", "a"]})
    screened = validate_frames(_mixed_suite(), {"rows": frame})
    assert screened == validate_frames(_mixed_suite(), {"rows": frame}, screen=False)
    passed, below, unknown, observed, missing, gone = screened.results
    assert passed.success and passed.unexpected_count == 0
    # A failure found by the BASIC screen is re-run in COMPLETE: its examples name the rows by index.
    assert not below.success and below.examples == ({"n": 1, "task_id": "t1"}, {"n": 2, "task_id": "t2"})
    assert not unknown.success and unknown.examples == ({"kind": "c", "task_id": "t3"},)
    assert observed.success and observed.observed == "4"
    assert not missing.success and missing.examples == ({"missing": "z"},)
    assert not gone.success and "gone" in gone.error


def _counted_builds(monkeypatch) -> list:
    """Every configuration Great Expectations builds from an expectation's fields, from now on."""
    from pipeline.contracts import expectation_memo

    assert expectation_memo.install()  # the pinned Great Expectations has the property it replaces
    builds: list = []
    build = expectation_memo._build
    # The objects themselves are kept, so that no two of them share an id.
    monkeypatch.setattr(expectation_memo, "_build", lambda e: builds.append(e) or build(e))
    return builds


def test_a_run_configures_each_expectation_once_and_gives_the_results_of_a_run_without(monkeypatch):
    from contextlib import nullcontext

    import pyarrow as pa

    from pipeline.contracts import runner

    frame = pa.table({"task_id": ["t1", "t2", "t3", "t4"], "n": [1, 2, 5, 8], "kind": ["a", "b", "c", "a"]})
    builds = _counted_builds(monkeypatch)
    memoized = runner.validate_frames(_mixed_suite(), {"rows": frame})
    # Great Expectations makes expectation objects of its own as it goes; none is configured twice.
    assert len(builds) == len({id(e) for e in builds})
    with_memo = len(builds)
    builds.clear()
    monkeypatch.setattr(runner, "configurations_built_once", nullcontext)
    assert runner.validate_frames(_mixed_suite(), {"rows": frame}) == memoized
    assert len(builds) > 5 * with_memo  # each object configured again and again


def test_outside_a_run_and_in_other_threads_configurations_are_built_afresh():
    import threading

    import great_expectations as gx

    from pipeline.contracts.expectation_memo import configurations_built_once, install

    assert install()
    expectation = gx.expectations.ExpectColumnValuesToNotBeNull(column="n")
    assert expectation.configuration is not expectation.configuration
    elsewhere: list[bool] = []
    with configurations_built_once():
        assert expectation.configuration is expectation.configuration
        other = threading.Thread(target=lambda: elsewhere.append(expectation.configuration is expectation.configuration))
        other.start()
        other.join()
    assert elsewhere == [False]
    assert expectation.configuration is not expectation.configuration

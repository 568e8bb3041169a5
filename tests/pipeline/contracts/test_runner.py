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

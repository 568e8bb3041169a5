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

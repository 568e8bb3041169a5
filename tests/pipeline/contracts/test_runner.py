"""The contract engine can be imported ahead of its first use, while a stage does other work."""

import subprocess
import sys

IMPORT_AHEAD = """
import sys
from pipeline.contracts.runner import import_in_background
assert "great_expectations" not in sys.modules  # the pipeline imports it lazily
thread = import_in_background()
assert thread is not None and thread.daemon
thread.join()
assert "great_expectations" in sys.modules
assert import_in_background() is None  # once imported, nothing more to start
"""


def test_great_expectations_is_imported_in_a_thread_and_only_once():
    # A fresh interpreter: this session may have imported Great Expectations already.
    done = subprocess.run([sys.executable, "-c", IMPORT_AHEAD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr

"""Running a command that file permissions apply to, even when the tests run as root.

Root ignores read and write permissions (capabilities CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH), so
a test that makes a file unreadable or a folder read-only proves nothing in a root container. As
root, the command therefore runs with those two capabilities dropped from its bounding set before
``exec``: it is still root and still owns root's files, but a mode of 000 or 555 now binds it.
"""

import ctypes
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _drop_permission_overrides() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def robustgym(*args: str) -> list[str]:
    """The argv of the ``robustgym`` CLI run by this interpreter."""
    return [sys.executable, "-c", "import sys; from robustgym.cli import main; sys.exit(main())", *args]


def run_bound_by_permissions(argv: list[str], *, cwd: Path, timeout: float = 300,
                             **kwargs) -> subprocess.CompletedProcess:
    """Run ``argv`` (``"python"`` = this interpreter) so that file permissions apply to it."""
    argv = [sys.executable if a == "python" else a for a in argv]
    env = {**os.environ, "PYTHONPATH": str(REPO), **kwargs.pop("env", {})}
    preexec = _drop_permission_overrides if os.geteuid() == 0 else None
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          preexec_fn=preexec, **kwargs)

"""Running a command the way users meet failures: file permissions that bind, a full disk, Ctrl-C.

- **Permissions.** Root ignores read and write permissions (capabilities CAP_DAC_OVERRIDE and
  CAP_DAC_READ_SEARCH), so a test that makes a file unreadable or a folder read-only proves nothing
  in a root container. As root the command runs with those two capabilities dropped from its
  bounding set before ``exec``: still root, but a mode of 000 or 555 now binds it.
- **A full disk** is ``RLIMIT_FSIZE``: writing past it fails with EFBIG ("File too large"), the way
  a full disk fails with ENOSPC, at whatever point the command has reached.
"""

import ctypes
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def robustgym(*args: str) -> list[str]:
    """The argv of the ``robustgym`` CLI run by this interpreter."""
    return [sys.executable, "-c", "import sys; from robustgym.cli import main; sys.exit(main())", *map(str, args)]


def _preexec(file_size: int | None, bound_by_permissions: bool):
    def limit() -> None:
        # Ctrl-C reaches the command even when the suite runs as a background job of a shell
        # without job control, which starts it with SIGINT ignored.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
        if bound_by_permissions and os.geteuid() == 0:
            libc = ctypes.CDLL(None, use_errno=True)
            for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
                if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                    raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")
    return limit


def popen(argv: list[str], *, cwd: Path, file_size: int | None = None, bound_by_permissions: bool = False,
          **kwargs) -> subprocess.Popen:
    """Start ``argv`` (``"python"`` = this interpreter) under the given limits; text pipes."""
    argv = [sys.executable if a == "python" else str(a) for a in argv]
    env = {**os.environ, "PYTHONPATH": str(REPO), **kwargs.pop("env", {})}
    return subprocess.Popen(argv, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=_preexec(file_size, bound_by_permissions), **kwargs)


def run(argv: list[str], *, cwd: Path, timeout: float = 300, **limits) -> subprocess.CompletedProcess:
    """Run ``argv`` to completion under the given limits (see ``popen``)."""
    with popen(argv, cwd=cwd, **limits) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)

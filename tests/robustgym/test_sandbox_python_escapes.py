"""Exploits against the Python tool: network, the release's files, other processes, resources.

Each test runs agent code that tries one way out: open a socket, read or list the release folder
(its task files hold answers and gold SQL) or the base database, write outside the scratch
directory, start a process, signal the environment, load ctypes or a third-party C extension
(which could read files without raising audit events), reach the audit hook's state through
``gc``, lift the resource limits, allocate 10 GiB, spin the CPU, or never finish. Each must come
back as a clear tool error, and the environment must serve the next call. The same refusals are
checked with the operating-system layer (namespaces) switched off, since hosts without
``unshare`` rely on the in-process layers alone.
"""

from pathlib import Path

import pytest

import robustgym.python_sandbox as python_sandbox
from robustgym.env import Env, Limits
from robustgym.python_sandbox import PythonLimits

LIMITS = Limits(python=PythonLimits(timeout_s=3.0, cpu_s=1, memory_mb=256), max_tool_calls=10_000)


@pytest.fixture(scope="module", params=["os_isolation", "audit_only"])
def py_env(request, demo_release):
    saved = list(python_sandbox._ISOLATION)
    if request.param == "audit_only":
        python_sandbox._ISOLATION[:] = [None]
    try:
        with Env(demo_release, limits=LIMITS) as env:
            env.reset(demo_release.tasks("test")[0].task_id)
            yield env
    finally:
        python_sandbox._ISOLATION[:] = saved


def fails(env, code: str, kind: str = "python_error") -> str:
    observation = env.python(code)
    assert not observation.ok, f"the code ran: {observation.content[:300]}"
    assert observation.error_kind == kind, observation.content
    return observation.content


def serves_next_call(env) -> None:
    observation = env.python("print(query('SELECT count(*) AS n FROM patients')[0]['n'])")
    assert observation.ok and observation.content.strip() == "100", observation.content


def test_plain_code_runs_and_reads_the_episode_through_query(py_env):
    observation = py_env.python("import statistics\nrows = query('SELECT anchor_age FROM patients')\n"
                                "print(len(rows), statistics.median(r['anchor_age'] for r in rows))")
    assert observation.ok, observation.content
    assert observation.content.split()[0] == "100"


def test_query_inside_python_obeys_the_sql_sandbox(py_env):
    content = fails(py_env, "query('SELECT * FROM rg_base.main.labevents')")
    assert "QueryError: sandbox_violation" in content
    serves_next_call(py_env)


@pytest.mark.parametrize("code", [
    "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=1)",
    "import _socket\n_socket.socket()",
    "import urllib.request\nurllib.request.urlopen('http://example.com', timeout=1)",
])
def test_opening_a_socket_is_refused(py_env, code):
    assert "PermissionError: sandbox" in fails(py_env, code)
    serves_next_call(py_env)


def test_reading_the_release_folder_is_refused(py_env, demo_release):
    for path in (demo_release.root / "tasks" / "test.parquet", demo_release.root / "manifest.json",
                 demo_release.base_database):
        content = fails(py_env, f"print(open({str(path)!r}, 'rb').read(100))")
        assert "PermissionError: sandbox: reading" in content
    assert "PermissionError: sandbox: listing" in fails(py_env, f"import os\nprint(os.listdir({str(demo_release.root)!r}))")
    serves_next_call(py_env)


def test_following_a_symlink_to_the_release_is_refused(py_env, demo_release):
    target = demo_release.root / "manifest.json"
    content = fails(py_env, f"import os\nos.symlink({str(target)!r}, 'link')\nprint(open('link').read())")
    assert "PermissionError: sandbox" in content


def test_reading_system_files_and_writing_outside_the_scratch_directory_are_refused(py_env, tmp_path):
    assert "reading /etc/passwd" in fails(py_env, "open('/etc/passwd').read()")
    target = tmp_path / "leak.txt"
    assert "writing" in fails(py_env, f"open({str(target)!r}, 'w').write('x')")
    assert not target.exists()
    ok = py_env.python("open('scratch.txt', 'w').write('kept')\nprint(open('scratch.txt').read())")
    assert ok.ok and ok.content.strip() == "kept"


@pytest.mark.parametrize("code", [
    "import subprocess\nsubprocess.run(['id'])",
    "import os\nos.system('id')",
    "import os\nos.fork()",
    "import os\nos.execv('/bin/sh', ['sh'])",
    "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
    "import ctypes",
    "import gc\ngc.get_objects()",
    "import sys\nsys.settrace(lambda *a: None)",
    "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))",
])
def test_processes_signals_ctypes_introspection_and_rlimits_are_refused(py_env, code):
    assert "PermissionError: sandbox" in fails(py_env, code)
    serves_next_call(py_env)


def test_a_third_party_c_extension_cannot_be_loaded(py_env):
    """site-packages is off the path (-S); loading an extension by hand (dlopen raises no audit
    event) is stopped by the wrapped loader."""
    import duckdb

    so = next(Path(duckdb.__file__).parent.parent.glob("_duckdb*.so"))
    code = ("import _imp, importlib.util as u\n"
            f"spec = u.spec_from_loader('_duckdb', loader=None, origin={str(so)!r})\n"
            "print(_imp.create_dynamic(spec))")
    content = fails(py_env, code)
    assert "PermissionError: sandbox" in content or "cannot open shared object" in content
    assert "No module named 'duckdb'" in fails(py_env, "import duckdb")


def test_allocating_10_gib_is_stopped_by_the_memory_limit(py_env):
    content = fails(py_env, "x = bytearray(10 * 2**30)", kind="resource_limit")
    assert "256 MB memory limit" in content
    serves_next_call(py_env)


def test_a_cpu_loop_is_stopped_by_the_cpu_limit(py_env):
    content = fails(py_env, "while True:\n    pass", kind="resource_limit")
    assert "CPU" in content
    serves_next_call(py_env)


def test_code_that_never_finishes_is_stopped_at_the_wall_clock_limit(py_env):
    content = fails(py_env, "import time\nprint('started', flush=True)\ntime.sleep(60)", kind="timeout")
    assert "longer than 3 s" in content and "started" in content
    serves_next_call(py_env)


def test_the_child_gets_no_path_of_the_release(py_env, demo_release):
    observation = py_env.python("import os, sys\nprint(os.environ)\nprint(sys.argv)\nprint(os.getcwd())")
    assert observation.ok
    assert str(demo_release.root) not in observation.content
    assert str(demo_release.root.parent) not in observation.content

"""The Python tool's sandbox: each call is a fresh, limited child process.

Layers, outermost first (docs/architecture.md, "Environment and sandbox", says why each exists):

1. **Operating system, when available.** The child starts in new network and mount namespaces
   (``unshare``): it has no network interface but loopback, and the release folder and the base
   database are covered by empty mounts, so even code that escaped the layers below finds nothing.
   Whether this layer is active is probed once and reported by ``os_isolation()``; without it (no
   ``unshare``, or user namespaces disabled) the layers below still hold.
2. **Process limits.** ``RLIMIT_AS`` (memory), ``RLIMIT_CPU``, ``RLIMIT_FSIZE`` and no core dumps,
   set by the child before any agent code runs; the parent kills the child's process group at the
   wall-clock limit.
3. **What the child is given.** ``python -I -S``: no site-packages (third-party C extensions could
   read files behind the audit hook's back), no user site, no ``PYTHON*`` variables; an empty
   temporary working directory; an environment with no path of the release; the code on stdin.
4. **An audit hook** installed before the agent's code runs refuses: sockets; processes (fork,
   exec, spawn, system, kill); ctypes and modules that reach files or memory without audit events;
   changing rlimits; tracing and ``gc`` introspection (which could reach the hook's own state);
   opening or listing anything outside the standard library and the working directory, and
   writing outside the working directory. A refused operation raises ``PermissionError`` in the
   agent's code, so it shows up as a clear error in the tool's output.

The episode's data is reached through ``query(sql)``, which sends the statement to the parent over
a pipe; the parent runs it through the same SQL sandbox as the ``sql`` tool.
"""

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from robustgym.jsonable import to_json
from robustgym.sql_sandbox import QueryResult, SqlToolError


@dataclass(frozen=True)
class PythonLimits:
    timeout_s: float = 10.0  # wall clock, including the time its queries take
    cpu_s: int = 5
    memory_mb: int = 512  # address space of the child
    file_mb: int = 16  # largest file the child may write in its working directory
    max_output_chars: int = 20_000


class PythonToolError(Exception):
    kind = "python_error"


class PythonTimeout(PythonToolError):
    kind = "timeout"


class PythonResourceLimit(PythonToolError):
    kind = "resource_limit"


@dataclass(frozen=True)
class PythonOutput:
    stdout: str
    stderr: str
    queries: int
    elapsed_ms: float


# ---------------------------------------------------------------- the child's bootstrap

# Runs as ``python -I -S -c _BOOTSTRAP req_fd resp_fd config``; the agent's code arrives on stdin.
# Everything the audit hook uses is bound in its closure at install time, and path resolution uses
# only C functions, so reassigning module attributes (os.path.realpath, ...) cannot weaken it.
_BOOTSTRAP = r'''
import sys, os, json, resource, linecache, traceback, stat, posix

def _install(cfg, work):
    deny_prefixes = ("socket.", "ctypes.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn",
                     "os.fork", "os.forkpty", "os.system", "os.kill", "os.killpg", "os.startfile",
                     "os.chdir", "os.fchdir", "os.chroot", "pty.", "resource.setrlimit", "resource.prlimit",
                     "sys.settrace", "sys.setprofile", "sys._current_frames", "gc.get_", "sqlite3.",
                     "signal.pthread_kill", "_posixshmem.", "dbm.", "syslog.", "webbrowser.",
                     "sys.remote_exec", "os.add_dll_directory", "mmap.")
    deny_modules = ("_posixsubprocess", "_ctypes", "ctypes", "_posixshmem", "_multiprocessing",
                    "multiprocessing", "_xxsubinterpreters", "_xxinterpchannels", "_testcapi",
                    "_testinternalcapi", "readline", "_ssl", "ssl", "_dbm", "_gdbm", "_curses", "_tkinter",
                    "_sqlite3", "_socket", "socket", "mmap", "_lsprof")
    write_events = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod",
                    "os.chown", "os.truncate", "os.utime", "os.chflags", "os.lchflags", "os.setxattr",
                    "os.removexattr", "os.mkfifo", "os.mknod", "shutil.rmtree", "shutil.move",
                    "shutil.copyfile", "shutil.copytree", "shutil.chown", "shutil.make_archive",
                    "shutil.unpack_archive")
    list_events = ("os.listdir", "os.scandir", "glob.glob", "glob.glob/2", "os.listxattr", "os.getxattr")
    sep = "/"
    read_roots = tuple(cfg["read_roots"]) + (work,)
    deny_roots = tuple(cfg["deny_roots"])
    write_roots = (work,)
    lstat, readlink, S_ISLNK, S_ISDIR, stat_ = posix.lstat, posix.readlink, stat.S_ISLNK, stat.S_ISDIR, posix.stat
    write_flags = posix.O_WRONLY | posix.O_RDWR | posix.O_CREAT | posix.O_TRUNC | posix.O_APPEND
    _str, _bytes, _int, _type, _isinstance, _len = str, bytes, int, type, isinstance, len
    deny = PermissionError

    def resolve(path, depth=0):
        # realpath with C calls only: symlinks are followed so a link cannot point out of a root.
        if depth > 32:
            raise deny("sandbox: too many symbolic links")
        if not path.startswith(sep):
            path = work + sep + path
        parts, out = path.split(sep), []
        for i, part in enumerate(parts):
            if part in ("", "."):
                continue
            if part == "..":
                if out:
                    out.pop()
                continue
            candidate = sep + sep.join(out + [part])
            try:
                st = lstat(candidate)
            except OSError:
                out.append(part)
                continue
            if S_ISLNK(st.st_mode):
                target = readlink(candidate)
                base = target if target.startswith(sep) else sep + sep.join(out) + sep + target
                rest = sep.join(parts[i + 1:])
                return resolve(resolve(base, depth + 1) + (sep + rest if rest else ""), depth + 1)
            out.append(part)
        return sep + sep.join(out)

    def under(path, roots):
        for r in roots:
            if path == r or path.startswith(r + sep):
                return True
        return False

    def inside(path, roots):
        return under(path, roots) and (roots is write_roots or not under(path, deny_roots))

    def text_path(p, event):
        if _type(p) is _int:
            return None
        if _type(p) is _bytes:
            p = p.decode("utf-8", "surrogateescape")
        if _type(p) is not _str:
            raise deny(f"sandbox: {event} needs the path as a plain str, got {_type(p).__name__}")
        return resolve(p)

    def hook(event, args):
        if event == "open":
            path = text_path(args[0], event)
            if path is None:
                return
            mode, flags = args[1], args[2] if _len(args) > 2 else 0
            writing = (_isinstance(mode, _str) and any(c in mode for c in "wax+")) or \
                      (_isinstance(flags, _int) and flags & write_flags)
            if writing and not inside(path, write_roots):
                raise deny(f"sandbox: writing {path} is not allowed (only the working directory)")
            if not inside(path, read_roots):
                raise deny(f"sandbox: reading {path} is not allowed")
            if not inside(path, write_roots):
                try:
                    if S_ISDIR(stat_(path).st_mode):
                        raise deny(f"sandbox: opening the directory {path} is not allowed")
                except OSError:
                    pass
        elif event == "import":
            name = args[0]
            if name in deny_modules or name.split(".")[0] in deny_modules:
                raise deny(f"sandbox: importing {name} is not allowed")
        elif event.startswith(deny_prefixes):
            raise deny(f"sandbox: {event} is not allowed (no network, processes or system access)")
        elif event in list_events:
            path = text_path(args[0] if args and args[0] is not None else ".", event)
            if path is not None and not inside(path, read_roots):
                raise deny(f"sandbox: listing {path} is not allowed")
        elif event in write_events:
            for p in args[:2]:
                if _isinstance(p, (_str, _bytes)) or (p is not None and not _isinstance(p, _int)):
                    path = text_path(p, event)
                    if path is not None and not inside(path, write_roots):
                        raise deny(f"sandbox: {event} on {path} is not allowed")
            if event in ("os.remove", "os.rmdir", "os.mkdir", "os.chmod", "os.symlink") and args[-1] is not None:
                raise deny(f"sandbox: {event} with dir_fd is not allowed")

    # Loading a C extension (dlopen) raises no audit event: the loader is wrapped so only the
    # standard library's own extensions load. The spec is copied so its origin cannot change
    # between the check and the load.
    import _imp
    from importlib.machinery import ModuleSpec
    real_create_dynamic, real_create_builtin = _imp.create_dynamic, _imp.create_builtin

    def create_dynamic(spec, *rest):
        name, origin = spec.name, spec.origin
        if _type(name) is not _str or _type(origin) is not _str or not inside(resolve(origin), read_roots):
            raise deny(f"sandbox: loading the extension {origin!r} is not allowed")
        return real_create_dynamic(ModuleSpec(name, None, origin=origin), *rest)

    def create_builtin(spec):
        name = spec.name
        if _type(name) is not _str or name in ("_imp", "sys", "builtins"):
            raise deny(f"sandbox: re-creating the module {name!r} is not allowed")
        return real_create_builtin(ModuleSpec(name, None, origin="built-in"))

    _imp.create_dynamic, _imp.create_builtin = create_dynamic, create_builtin
    sys.addaudithook(hook)


class QueryError(Exception):
    """The sandbox refused or DuckDB rejected a query."""


def _make_query(req, resp):
    buf = bytearray()
    def query(sql):
        """Run one read-only SELECT on the episode's data; returns a list of dicts (column -> value)."""
        if not isinstance(sql, str):
            raise TypeError("query() takes the SQL text")
        os.write(req, (json.dumps({"sql": sql}) + "\n").encode())
        while b"\n" not in buf:
            chunk = os.read(resp, 1 << 16)
            if not chunk:
                raise QueryError("the environment closed the query channel")
            buf.extend(chunk)
        line, _, rest = bytes(buf).partition(b"\n")
        buf[:] = rest
        reply = json.loads(line)
        if "error" in reply:
            raise QueryError(reply["error"])
        return [dict(zip(reply["columns"], row)) for row in reply["rows"]]
    return query


def _main():
    req, resp, cfg = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
    memory = cfg["memory_bytes"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cfg["cpu_s"], cfg["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["file_bytes"], cfg["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    code = sys.stdin.read()
    work = os.path.realpath(os.getcwd())
    for name in ("_posixsubprocess", "_ctypes", "ctypes", "_socket", "socket", "subprocess", "_posixshmem"):
        sys.modules.pop(name, None)
    linecache.cache["<agent>"] = (len(code), None, code.splitlines(True), "<agent>")
    namespace = {"__name__": "__main__", "__builtins__": __builtins__, "query": _make_query(req, resp),
                 "QueryError": QueryError}
    compiled = compile(code, "<agent>", "exec")
    _install(cfg, work)
    exec(compiled, namespace)


try:
    _main()
except SystemExit:
    raise
except MemoryError:
    sys.stderr.write("MemoryError: the Python tool's memory limit was reached\n")
    sys.exit(3)
except BaseException:
    etype, value, tb = sys.exc_info()
    frames = [f for f in traceback.extract_tb(tb) if f.filename == "<agent>"]
    sys.stderr.write("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames)))
    sys.stderr.write("".join(traceback.format_exception_only(etype, value)))
    sys.exit(1)
'''

_MOUNT_SCRIPT = r'''
n=$1; shift
while [ "$n" -gt 0 ]; do
  p=$1; shift; n=$((n-1))
  if [ -d "$p" ]; then mount -t tmpfs -o ro,size=4k,mode=000 robustgym-hidden "$p" || exit 97
  elif [ -e "$p" ]; then mount --bind /dev/null "$p" || exit 97
  fi
done
exec "$@"
'''

_ISOLATION: list[tuple[str, ...] | None] = []
_ISOLATION_LOCK = threading.Lock()


def os_isolation() -> tuple[str, ...] | None:
    """The ``unshare`` prefix giving the child its own network and mount namespaces, if this host allows it."""
    with _ISOLATION_LOCK:
        if not _ISOLATION:
            _ISOLATION.append(_probe_isolation())
        return _ISOLATION[0]


def _probe_isolation() -> tuple[str, ...] | None:
    unshare = shutil.which("unshare")
    if not unshare or not sys.platform.startswith("linux"):
        return None
    prefix = (unshare, "--net", "--mount") if os.geteuid() == 0 else (unshare, "--map-root-user", "--net", "--mount")
    with tempfile.TemporaryDirectory(prefix="robustgym-probe-") as probe:
        try:
            done = subprocess.run([*prefix, "sh", "-c", _MOUNT_SCRIPT, "sh", "1", probe, "true"],
                                  capture_output=True, timeout=10, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.TimeoutExpired):
            return None
    return prefix if done.returncode == 0 else None


def _read_roots() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib") if k in paths})


def _third_party_roots() -> list[str]:
    """site-packages: inside the stdlib folder on most layouts, never readable by the child."""
    paths = sysconfig.get_paths()
    return sorted({os.path.realpath(paths[k]) for k in ("purelib", "platlib") if k in paths})


class PythonRunner:
    """Runs agent code in a child process; ``hidden`` are paths the child must never see."""

    def __init__(self, hidden: Sequence[Path], limits: PythonLimits = PythonLimits()):
        self.hidden = tuple(str(Path(p).resolve()) for p in hidden)
        self.limits = limits

    def run(self, code: str, query: Callable[[str], QueryResult]) -> PythonOutput:
        if not isinstance(code, str) or not code.strip():
            raise PythonToolError("the code is empty")
        started = time.perf_counter()
        limits = self.limits
        with tempfile.TemporaryDirectory(prefix="robustgym-py-") as work:
            req_r, req_w = os.pipe()
            resp_r, resp_w = os.pipe()
            config = {"memory_bytes": limits.memory_mb << 20, "cpu_s": limits.cpu_s,
                      "file_bytes": limits.file_mb << 20, "read_roots": _read_roots(),
                      "deny_roots": _third_party_roots()}
            argv = [sys.executable, "-I", "-S", "-c", _BOOTSTRAP, str(req_w), str(resp_r), json.dumps(config)]
            prefix = os_isolation()
            if prefix:
                hidden = [*self.hidden, *_third_party_roots()]
                argv = [*prefix, "sh", "-c", _MOUNT_SCRIPT, "sh", str(len(hidden)), *hidden, *argv]
            env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": work, "TMPDIR": work}
            try:
                child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, cwd=work, env=env, pass_fds=(req_w, resp_r),
                                         start_new_session=True)
            finally:
                os.close(req_w)
                os.close(resp_r)
            try:
                stdout, stderr, queries, timed_out = self._serve(child, code, req_r, resp_w, query, started)
            finally:
                os.close(req_r)
                os.close(resp_w)
                _kill(child)
        elapsed = (time.perf_counter() - started) * 1000
        return self._outcome(child.returncode, stdout, stderr, queries, timed_out, elapsed)

    def _serve(self, child, code, req_r, resp_w, query, started):
        limits = self.limits
        deadline = started + limits.timeout_s
        out = {child.stdout.fileno(): bytearray(), child.stderr.fileno(): bytearray()}
        cap = limits.max_output_chars * 4
        requests, pending, queries = bytearray(), bytearray(), 0
        try:
            child.stdin.write(code.encode("utf-8", "surrogateescape"))
            child.stdin.close()
        except BrokenPipeError:
            pass
        os.set_blocking(resp_w, False)
        sel = selectors.DefaultSelector()
        for fd in (*out, req_r):
            sel.register(fd, selectors.EVENT_READ)
        open_fds = {*out, req_r}
        resp_registered = False
        timed_out = False
        while open_fds:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                timed_out = True
                break
            for key, events in sel.select(timeout=min(remaining, 0.5)):
                fd = key.fd
                if fd == resp_w:
                    try:
                        sent = os.write(resp_w, pending)
                        del pending[:sent]
                    except BlockingIOError:
                        pass
                    except BrokenPipeError:
                        pending.clear()
                    if not pending:
                        sel.unregister(resp_w)
                        resp_registered = False
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    sel.unregister(fd)
                    open_fds.discard(fd)
                    continue
                if fd in out:
                    if len(out[fd]) < cap:
                        out[fd].extend(chunk[: cap - len(out[fd])])
                    continue
                requests.extend(chunk)
                while b"\n" in requests:
                    line, _, rest = bytes(requests).partition(b"\n")
                    requests[:] = rest
                    queries += 1
                    pending.extend(self._answer(line, query))
                    if not resp_registered:
                        sel.register(resp_w, selectors.EVENT_WRITE)
                        resp_registered = True
        sel.close()
        if not timed_out:
            try:
                child.wait(timeout=max(0.1, deadline - time.perf_counter()))
            except subprocess.TimeoutExpired:
                timed_out = True
        decode = lambda b: bytes(b).decode("utf-8", "replace")  # noqa: E731
        return decode(out[child.stdout.fileno()]), decode(out[child.stderr.fileno()]), queries, timed_out

    @staticmethod
    def _answer(line: bytes, query: Callable[[str], QueryResult]) -> bytes:
        try:
            sql = json.loads(line)["sql"]
            result = query(sql)
            reply = {"columns": list(result.columns), "rows": [to_json(list(r)) for r in result.rows]}
        except SqlToolError as exc:
            reply = {"error": f"{exc.kind}: {exc}"}
        except (ValueError, KeyError, TypeError) as exc:
            reply = {"error": f"malformed query request: {exc}"}
        return (json.dumps(reply) + "\n").encode()

    def _outcome(self, code, stdout, stderr, queries, timed_out, elapsed) -> PythonOutput:
        limits = self.limits
        stdout, stderr = _clip(stdout, limits.max_output_chars), _clip(stderr, limits.max_output_chars)
        if timed_out:
            raise PythonTimeout(f"the Python code ran longer than {limits.timeout_s:g} s and was stopped"
                                + _tail("output so far", stdout))
        if code in (-signal.SIGXCPU, -signal.SIGKILL) and not stderr:
            raise PythonResourceLimit(f"the Python code used more than {limits.cpu_s} s of CPU and was stopped")
        if code == 3 or "MemoryError" in stderr:
            raise PythonResourceLimit(f"the Python code needed more than the {limits.memory_mb} MB memory limit"
                                      + _tail("error", stderr))
        if code != 0:
            if code is not None and code < 0:
                raise PythonToolError(f"the Python process was killed by signal {-code}" + _tail("error", stderr))
            raise PythonToolError((stderr.strip() or f"the Python code exited with status {code}")
                                  + _tail("output", stdout))
        return PythonOutput(stdout, stderr, queries, elapsed)


def _kill(child: subprocess.Popen) -> None:
    if child.poll() is None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for stream in (child.stdin, child.stdout, child.stderr):
        if stream and not stream.closed:
            stream.close()
    child.wait()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… (output cut at {limit} characters)"


def _tail(label: str, text: str) -> str:
    text = text.strip()
    return f"\n{label}:\n{text[-2000:]}" if text else ""

"""One build at a time per folder: a lock file that records who holds it.

Two builds writing the same intermediate folder overwrite each other's temporary files (one dies
with ``FileNotFoundError`` on a file the other renamed away). ``build_lock(folder)`` lets exactly one
in: it takes an exclusive ``flock`` on ``<folder>/.robustgym-build.lock`` and writes the holder (pid,
host, start time, command) into it. The kernel releases a ``flock`` when its process dies however it
dies, so a lock left by a killed build is simply taken over by the next one, which says so (the file
still names the dead holder); a clean release empties the file. A second build meanwhile gets
``BuildLocked`` naming the holder.

Where ``flock`` is not supported (some network file systems) the record alone decides: a holder
whose pid no longer runs on this host is taken over, any other holder is respected.

A Dagster run (the UI's *Materialize*, a schedule) writes the same folder one step at a time, each
step perhaps in a process of its own. ``step_lock(folder)`` takes the same lock *shared* for one
step: steps of runs share it with each other (their partitions write different files), a build
holding it excludes them (the step fails naming the build), and a step holding it makes a build
wait its turn (``BuildLocked``). A build's own steps, run in the build's process or in processes it
forks, find the folder among the ones this process holds (``_HELD``) and take nothing.
"""

import errno
import fcntl
import json
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

LOCK_NAME = ".robustgym-build.lock"
# Folders whose lock this process holds, inherited by the processes a build forks for its steps.
_HELD: set[Path] = set()


@dataclass(frozen=True)
class LockHolder:
    pid: int
    host: str
    started: str  # ISO time, UTC
    command: str

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, started {self.started}" + (f" ({self.command})" if self.command else "")


class BuildLocked(RuntimeError):
    """Another build holds the folder's lock."""

    def __init__(self, path: Path, holder: LockHolder | None):
        self.path, self.holder = path, holder
        who = holder.describe() if holder else "a step of a Dagster run (or a build that did not record itself)"
        super().__init__(f"another build is running in {path.parent}: {who} holds {path}; "
                         "wait for it to finish (or stop it) and build again")


def process_alive(pid: int) -> bool:
    """Whether ``pid`` names a running process on this host."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def _read(fd: int) -> LockHolder | None:
    data = os.pread(fd, 1 << 16, 0)
    try:
        return LockHolder(**json.loads(data)) if data.strip() else None
    except (ValueError, TypeError):
        return None  # unreadable: treated like an empty record


def _write(fd: int, holder: LockHolder | None) -> None:
    os.ftruncate(fd, 0)
    if holder is not None:
        os.pwrite(fd, (json.dumps(asdict(holder), sort_keys=True) + "\n").encode(), 0)
    os.fsync(fd)


def _open(folder: Path) -> tuple[Path, int]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    return path, os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def _take(path: Path, fd: int, mode: int) -> None:
    """``flock`` ``fd`` in ``mode`` (exclusive or shared) without waiting, or raise ``BuildLocked``."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        raise BuildLocked(path, _read(fd)) from None
    except OSError as exc:
        if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
            raise
        recorded = _read(fd)  # no flock here: the record decides
        if recorded and (recorded.host != socket.gethostname() or process_alive(recorded.pid)):
            raise BuildLocked(path, recorded) from None


@contextmanager
def build_lock(folder: Path, *, command: str = "",
               say: Callable[[str], None] | None = None) -> Iterator[LockHolder]:
    """Hold ``folder``'s build lock for the block; raise ``BuildLocked`` when another build has it."""
    folder = Path(folder)
    path, fd = _open(folder)
    try:
        _take(path, fd, fcntl.LOCK_EX)
        stale = _read(fd)
        if stale is not None and say is not None:
            say(f"taking over {path}: its holder ({stale.describe()}) ended without releasing it")
        me = LockHolder(os.getpid(), socket.gethostname(),
                        datetime.now(timezone.utc).replace(microsecond=0).isoformat(), command)
        _write(fd, me)
        _HELD.add(folder.resolve())
        try:
            yield me
        finally:
            _HELD.discard(folder.resolve())
            _write(fd, None)
    finally:
        os.close(fd)  # releases the flock


@contextmanager
def step_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock shared for one step of a Dagster run; raise ``BuildLocked`` naming the
    build that holds it. A no-op in a build holding the lock (its own steps)."""
    folder = Path(folder).resolve()
    if folder in _HELD:
        yield
        return
    path, fd = _open(folder)
    try:
        _take(path, fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the shared flock

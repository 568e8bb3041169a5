"""Notice that a MIMIC-IV source folder changed, cheaply enough to ask every few minutes.

The source fingerprint the loader records hashes every byte of every file (minutes on the full
MIMIC-IV). A watcher only needs to know that something changed: this digest covers which table file
each folder supplies, its size and its modification time. A change starts a rebuild; the rebuild
computes the real fingerprint, and since a release is content-addressed, a file that was merely
touched leads to the same release (reused), not a new one.
"""

import hashlib
from collections.abc import Sequence
from pathlib import Path

from pipeline.loader import find_sources


def source_change_digest(dirs: Sequence[Path]) -> tuple[str, list[str]]:
    """(digest of the table files' paths, sizes and mtimes; problems finding them)."""
    files, problems = find_sources([Path(d) for d in dirs])
    h = hashlib.sha256()
    for name in sorted(files):
        path = files[name].path
        stat = path.stat()
        h.update(f"{name}\x00{path.resolve()}\x00{stat.st_size}\x00{stat.st_mtime_ns}\n".encode())
    return h.hexdigest(), [str(p) for p in problems]

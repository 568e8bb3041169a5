"""Stage outputs made from another source database are removed when the source changes.

Clean tasks, twins and the release candidate are derived from one source database (their
``base_fingerprint``). Once the source is rebuilt with another fingerprint, a file left from the
previous one could only mislead: a later stage reading it would mix two sources. So the source
asset removes every task file that does not hold only tasks of the new source (an empty file
proves nothing and goes too), and a release candidate settled on another source.
"""

import json
import shutil

import pyarrow.parquet as pq

from assets.resources import ProjectPaths
from pipeline.release.assembly import task_files

CANDIDATE_SETTINGS = ("release_candidate", "settings.json")


def _holds_only(path, fingerprint: str) -> bool:
    try:
        values = pq.read_table(str(path), columns=["base_fingerprint"]).column(0).unique().to_pylist()
    except Exception:  # unreadable or without the column: not a current task file
        return False
    return values == [fingerprint]


def remove_outputs_of_other_sources(paths: ProjectPaths, fingerprint: str) -> list[str]:
    """Remove what later stages built on another source; returns what was removed (relative to data/)."""
    removed = []
    for folder in (paths.clean_tasks_dir, paths.noise_dir):
        for f in task_files(folder):
            if not _holds_only(f, fingerprint):
                f.unlink()
                removed.append(str(f.relative_to(paths.data)))
    for summary in sorted(paths.noise_dir.glob("*.summary.json")) if paths.noise_dir.exists() else ():
        try:
            current = json.loads(summary.read_text()).get("base_fingerprint") == fingerprint
        except (OSError, ValueError):
            current = False
        if not current:
            summary.unlink()
            removed.append(str(summary.relative_to(paths.data)))
    if paths.source_audit.exists():
        try:
            current = json.loads(paths.source_audit.read_text()).get("fingerprint") == fingerprint
        except (OSError, ValueError):
            current = False
        if not current:
            for f in (paths.source_audit, paths.source_flagged_rows, paths.data / "source_anomalies.png"):
                if f.exists():
                    f.unlink()
                    removed.append(str(f.relative_to(paths.data)))
    candidate = paths.data / CANDIDATE_SETTINGS[0]
    settings = candidate / CANDIDATE_SETTINGS[1]
    if candidate.exists():
        try:
            current = json.loads(settings.read_text()).get("source_fingerprint") == fingerprint
        except (OSError, ValueError):
            current = False
        if not current:
            shutil.rmtree(candidate)
            removed.append(CANDIDATE_SETTINGS[0] + "/")
    return removed

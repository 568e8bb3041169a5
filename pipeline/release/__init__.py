"""Releases: splits, deterministic task files, manifest, dataset card, croissant, diff, atomic publish.

``build_release(tasks, source_db=..., version=..., releases_dir=...)`` is the entry point; see
``pipeline.release.publish`` and docs/architecture.md ("Releases").
"""

from pipeline.release.publish import (
    LATEST,
    ReleaseConflict,
    ReleaseResult,
    build_release,
    latest_version,
    resolve_release,
)
from pipeline.release.splits import DEFAULT_SHARES, assign_splits

__all__ = ["DEFAULT_SHARES", "LATEST", "ReleaseConflict", "ReleaseResult", "assign_splits", "build_release",
           "latest_version", "resolve_release"]

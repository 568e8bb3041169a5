"""What changed between a release and the one published before it (``diff.json``).

Counts are compared per (split, intent, level, noise type) category; tasks are compared by
``task_id`` (added, removed) and, for ids in both, by the content of their row (changed: a new
answer, a new split, a new patch...).
"""

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa

from pipeline.release.manifest import read_manifest
from pipeline.release.task_files import read_tasks
from pipeline.vocabulary import Split

DIFF = "diff.json"


def task_digests(tables: Mapping[str, pa.Table]) -> dict[str, str]:
    """task_id -> sha256 of the row's content."""
    out = {}
    for table in tables.values():
        for row in table.to_pylist():
            out[row["task_id"]] = hashlib.sha256(json.dumps(row, sort_keys=True, default=str).encode()).hexdigest()
    return out


def release_tables(release_dir: Path) -> dict[str, pa.Table]:
    return {s.value: read_tasks(Path(release_dir) / "tasks" / f"{s.value}.parquet") for s in Split}


def _category_key(cell: dict) -> tuple:
    return cell["split"], cell["intent"], cell["level"], cell["noise_type"]


def diff_releases(previous_dir: Path | None, version: str, tables: Mapping[str, pa.Table], counts: dict) -> dict:
    """The diff of a new release (its ``tables`` and ``counts``) against ``previous_dir`` (or none)."""
    if previous_dir is None:
        before_counts, before = {"total": 0, "by_category": []}, {}
        previous_version = None
    else:
        manifest = read_manifest(previous_dir)
        previous_version = manifest["version"]
        before_counts, before = manifest["counts"], task_digests(release_tables(previous_dir))
    after = task_digests(tables)
    b = {_category_key(c): c["tasks"] for c in before_counts["by_category"]}
    a = {_category_key(c): c["tasks"] for c in counts["by_category"]}
    categories = [{"split": k[0], "intent": k[1], "level": k[2], "noise_type": k[3],
                   "before": b.get(k, 0), "after": a.get(k, 0), "delta": a.get(k, 0) - b.get(k, 0)}
                  for k in sorted(set(a) | set(b)) if a.get(k, 0) != b.get(k, 0)]
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(i for i in set(after) & set(before) if after[i] != before[i])
    return {
        "version": version,
        "previous_version": previous_version,
        "total": {"before": before_counts["total"], "after": counts["total"],
                  "delta": counts["total"] - before_counts["total"]},
        "categories_changed": categories,
        "n_added": len(added), "n_removed": len(removed), "n_changed": len(changed),
        "tasks_added": added, "tasks_removed": removed, "tasks_changed": changed,
    }


def write_diff(release_dir: Path, diff: dict) -> Path:
    path = Path(release_dir) / DIFF
    path.write_text(json.dumps(diff, indent=2) + "\n")
    return path


def diff_markdown(diff: dict) -> str:
    if diff["previous_version"] is None:
        return f"First release: {diff['total']['after']} tasks, nothing to compare against."
    lines = [f"Against {diff['previous_version']}: {diff['total']['before']} -> {diff['total']['after']} tasks "
             f"({diff['total']['delta']:+d}); {diff['n_added']} added, {diff['n_removed']} removed, "
             f"{diff['n_changed']} changed."]
    if diff["categories_changed"]:
        lines += ["", "| split | intent | level | noise type | before | after | delta |",
                  "| --- | --- | --- | --- | ---: | ---: | ---: |"]
        lines += [f"| {c['split']} | {c['intent']} | {c['level']} | {c['noise_type']} | {c['before']} "
                  f"| {c['after']} | {c['delta']:+d} |" for c in diff["categories_changed"]]
    return "\n".join(lines)

"""Read a published release: its manifest, its tasks per split and its base database.

The layout is the contract in docs/architecture.md ("Release layout"). Reading checks what the
manifest promises (each listed file's sha256 and row count), that every task's split matches its
file and its ``base_fingerprint`` matches the base database, and that task ids are unique. Every
problem found is reported at once, each naming the file or the task.

The base database is identified by content (``base_database_digest``, see
``pipeline.source_db.content_digest``): DuckDB files of identical builds differ in bytes. A shipped
file whose sha256 matches the manifest is the published one; any other file (one passed as
``base_database``, or a byte-different copy from a reproduction) must match the content digest.
"""

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from pipeline.source_db import content_problem, read_source_info
from pipeline.task_model import Task, tasks_from_arrow
from pipeline.vocabulary import Split

MANIFEST = "manifest.json"
TASKS_DIR = "tasks"
LATEST = "latest"


class ReleaseError(ValueError):
    """The folder is not a readable release; ``problems`` lists every reason found."""

    def __init__(self, root: Path, problems: list[str]):
        self.root = root
        self.problems = problems
        super().__init__(f"release {root}: " + "; ".join(problems))


@dataclass(frozen=True)
class Release:
    root: Path
    manifest: dict
    base_database: Path
    fingerprint: str
    splits: dict[Split, tuple[Task, ...]]
    _by_id: dict[str, Task] = field(repr=False, compare=False, default_factory=dict)
    unread: frozenset[Split] = frozenset()  # splits left out by load_release(splits=...)

    @property
    def version(self) -> str:
        return str(self.manifest.get("version", self.root.name))

    def tasks(self, split: Split | str | None = None) -> tuple[Task, ...]:
        """The tasks of one split (in file order), or of every split read when ``split`` is None."""
        if split is None:
            return tuple(t for s in Split if s in self.splits for t in self.splits[s])
        try:
            split = Split(split)
        except ValueError:
            raise ValueError(f"{split!r} is not a split; known: {[s.value for s in Split]}") from None
        if split in self.unread:
            read = [s.value for s in Split if s not in self.unread]
            raise ValueError(f"release {self.version}: the {split.value} split was not read "
                             f"(load_release(..., splits=...) named only {read})")
        return self.splits.get(split, ())

    def task(self, task_id: str) -> Task:
        try:
            return self._by_id[task_id]
        except KeyError:
            raise KeyError(f"release {self.version} has no task {task_id!r}") from None

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._by_id


def load_release(path: Path | str, *, base_database: Path | str | None = None, verify: bool = True,
                 splits: Iterable[Split | str] | None = None) -> Release:
    """Read the release at ``path`` (a version folder, or a releases folder holding ``latest``).

    ``base_database`` is needed when the manifest's ``base_database`` is null (credentialed
    MIMIC-IV: the user rebuilds it with the manifest's ``rebuild_command``); it may also override a
    shipped one. Its fingerprint must equal the manifest's ``source.fingerprint``. ``verify``
    checks the sha256 of every file the manifest lists. ``splits`` reads only the tasks of those
    splits (a clean task and its twins share one): an evaluation of ``test`` need not decode
    ``train``; asking the release for another split is then an error.
    """
    wanted = tuple(Split) if splits is None else tuple(s for s in Split if s in {Split(x) for x in splits})
    root = _resolve_root(Path(path))
    problems: list[str] = []
    manifest_path = root / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except FileNotFoundError:
        raise ReleaseError(root, [f"no {MANIFEST}"]) from None
    except json.JSONDecodeError as exc:
        raise ReleaseError(root, [f"{MANIFEST} is not JSON: {exc}"]) from None
    if not isinstance(manifest, dict):
        raise ReleaseError(root, [f"{MANIFEST} is not a JSON object"])

    base = _base_path(root, manifest, base_database, problems)
    if verify:
        files = dict(manifest.get("files") or {})
        shipped = manifest.get("base_database")
        digest = manifest.get("base_database_digest")
        if digest and shipped in files:
            files.pop(shipped)  # checked by content below: a byte-different copy may be the same database
        problems += _verify_files(root, files)
        if digest and base is not None:
            problems += _verify_base(root, base, shipped, (manifest.get("files") or {}).get(shipped), digest)
    read: dict[Split, tuple[Task, ...]] = {}
    for split in wanted:
        file = root / TASKS_DIR / f"{split.value}.parquet"
        if file.exists():
            read[split] = tuple(_read_tasks(file, split, problems))
        elif f"{TASKS_DIR}/{split.value}.parquet" in (manifest.get("files") or {}):
            problems.append(f"{TASKS_DIR}/{split.value}.parquet is listed in the manifest but missing")
    if not read and splits is None:
        problems.append(f"no task file in {TASKS_DIR}/ (expected train/validation/test .parquet)")

    fingerprint = ""
    if base is not None:
        fingerprint = _fingerprint(base, problems)
        expected = (manifest.get("source") or {}).get("fingerprint")
        if fingerprint and expected and fingerprint != expected:
            problems.append(f"base database {base} has fingerprint {fingerprint[:12]}…, the release was built "
                            f"on {str(expected)[:12]}…")
    by_id: dict[str, Task] = {}
    for task in (t for tasks in read.values() for t in tasks):
        if task.task_id in by_id:
            problems.append(f"task {task.task_id}: id appears twice")
        by_id[task.task_id] = task
        if fingerprint and task.base_fingerprint and task.base_fingerprint != fingerprint:
            problems.append(f"task {task.task_id}: built on base {task.base_fingerprint[:12]}…, "
                            f"not this release's base database")
        if not task.accepted_outcomes:
            problems.append(f"task {task.task_id}: no accepted outcome (a verifier cannot pass or fail it)")
    if problems:
        raise ReleaseError(root, problems)
    return Release(root, manifest, base, fingerprint, read, by_id, frozenset(Split) - set(wanted))


def _resolve_root(path: Path) -> Path:
    path = path.resolve()
    if not (path / MANIFEST).exists() and (path / LATEST).exists():
        latest = path / LATEST
        target = latest.resolve() if latest.is_symlink() or latest.is_dir() else path / latest.read_text().strip()
        return target.resolve()
    return path


def _base_path(root: Path, manifest: dict, given: Path | str | None, problems: list[str]) -> Path | None:
    if given is not None:
        base = Path(given).resolve()
    elif manifest.get("base_database"):
        base = (root / manifest["base_database"]).resolve()
    else:
        rebuild = manifest.get("rebuild_command") or "see the release README"
        problems.append(f"the release ships no base database; build it from your own MIMIC-IV copy "
                        f"({rebuild}) and pass base_database=")
        return None
    if not base.is_file():
        problems.append(f"base database {base} not found")
        return None
    return base


def _fingerprint(base: Path, problems: list[str]) -> str:
    try:
        con = duckdb.connect(str(base), read_only=True)
    except duckdb.Error as exc:
        problems.append(f"base database {base} cannot be opened: {exc}")
        return ""
    try:
        return read_source_info(con).fingerprint
    except ValueError as exc:
        problems.append(f"base database {base}: {exc}")
        return ""
    finally:
        con.close()


def _verify_files(root: Path, files: dict) -> list[str]:
    problems = []
    for rel, expected in sorted(files.items()):
        file = root / rel
        if not file.is_file():
            problems.append(f"{rel} is listed in the manifest but missing")
            continue
        want = expected.get("sha256") if isinstance(expected, dict) else expected
        if want and _sha256(file) != want:
            problems.append(f"{rel}: sha256 differs from the manifest (the file changed after publication)")
        rows = expected.get("rows") if isinstance(expected, dict) else None
        if rows is not None and rel.endswith(".parquet") and pq.ParquetFile(file).metadata.num_rows != rows:
            problems.append(f"{rel}: {pq.ParquetFile(file).metadata.num_rows} rows, the manifest says {rows}")
    return problems


def _verify_base(root: Path, base: Path, shipped: str | None, listed: dict | None, digest: dict) -> list[str]:
    """The base database is the release's: the published file itself (its sha256), or a file with
    the same content digest."""
    if shipped and listed and base == (root / shipped).resolve() and _sha256(base) == listed.get("sha256"):
        return []
    problem = content_problem(base, digest)
    return [f"base database {problem}"] if problem else []


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with file.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _read_tasks(file: Path, split: Split, problems: list[str]) -> Iterable[Task]:
    try:
        tasks = tasks_from_arrow(pq.read_table(file))
    except (ValueError, OSError) as exc:
        problems.append(f"{file.relative_to(file.parents[1])}: {exc}")
        return []
    for task in tasks:
        if task.split is not None and task.split != split:
            problems.append(f"task {task.task_id}: split {task.split.value} but stored in {split.value}.parquet")
    return tasks

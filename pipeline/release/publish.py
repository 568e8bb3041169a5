"""Build and publish a release: splits, files, contracts, manifest, card, croissant, diff, latest.

Publishing is atomic. Everything is written into a temporary folder next to the releases
(``releases/.tmp-<version>-...``), read back and validated there (the data contracts on the Parquet
files as written, the manifest's hashes, croissant.json through mlcroissant), and only then renamed
to ``releases/<version>``; ``releases/latest`` is switched last, by an atomic rename of a symlink.
Any failure, an exception or an interrupt, removes the temporary folder: the previous releases and
``latest`` are untouched and no half release exists under a version name. A run killed outright
(SIGKILL, power loss) cannot clean up; its temporary names carry its host and pid, and the next
publish into the same folder removes those whose process no longer runs.

A version is immutable. Rebuilding an existing version is accepted when it reproduces the same task
files byte for byte (the release is left as it is); a build that would put different tasks under
an existing version is refused with ``ReleaseConflict``.
"""

import hashlib
import os
import re
import secrets
import shutil
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from pipeline.background import BackgroundCall
from pipeline.build_lock import process_alive
from pipeline.contracts import (
    ContractResult,
    ContractViolation,
    check_release_splits,
    check_task_set,
)
from pipeline.duckdb_memory import open_read_only
from pipeline.release.base_database import (
    BASE_DATABASE,
    classify_source,
    rebuild_command,
    ships_database,
)
from pipeline.release.croissant import build_croissant, validate_croissant, write_croissant
from pipeline.release.dataset_card import render_dataset_card, write_dataset_card
from pipeline.release.diff import diff_releases, write_diff
from pipeline.release.field_docs import FIELD_DESCRIPTIONS
from pipeline.release.manifest import (
    count_tasks,
    generator_version,
    read_manifest,
    schema_description,
    write_manifest,
)
from pipeline.release.splits import normalise_shares, with_splits
from pipeline.release.task_files import read_tasks, sha256_file, split_tables, write_tasks
from pipeline.source_db import content_digest, read_source_info
from pipeline.task_model import Task, tasks_to_arrow
from pipeline.vocabulary import Intent, Split

LATEST = "latest"
# Semantic versions (MAJOR.MINOR.PATCH[-pre][+build]): Croissant expects one, and they are plain folder names.
_VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?"
                      r"(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")


# Temporary names record the writer's host (hashed) and pid, so that a later publish can tell what a
# killed run left (its pid no longer runs on this host) from what another run is writing right now.
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]
_TEMPORARY = re.compile(r"^\.(?:tmp-.+|latest)-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[0-9a-f]{8}$")
_TEMPORARY_UNHOSTED = re.compile(r"^\.(?:tmp-.+|latest)-(?P<pid>\d+)-[0-9a-f]{8}$")  # names before the host


def build_time() -> datetime:
    """When the release was made: now, or ``$SOURCE_DATE_EPOCH`` (the reproducible-builds convention)
    so that two builds of the same source and seed can be compared byte for byte."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if epoch:
        try:
            return datetime.fromtimestamp(int(epoch), timezone.utc)
        except (ValueError, OverflowError, OSError):
            raise ValueError(f"SOURCE_DATE_EPOCH={epoch!r}: expected whole seconds since 1970-01-01") from None
    return datetime.now(timezone.utc).replace(microsecond=0)

def temporary_name(prefix: str) -> str:
    """``.<prefix>-<host>-<pid>-<random>``: a name in the releases folder only this run writes."""
    return f".{prefix}-{_HOST}-{os.getpid()}-{secrets.token_hex(4)}"


def remove_abandoned(releases_dir: Path) -> list[str]:
    """Remove the temporary folders and links of publishes whose process no longer runs here."""
    removed = []
    for entry in sorted(Path(releases_dir).glob(".*")):
        m = _TEMPORARY.match(entry.name) or _TEMPORARY_UNHOSTED.match(entry.name)
        if m is None or m.groupdict().get("host", _HOST) != _HOST:
            continue
        pid = int(m["pid"])
        if pid == os.getpid() or process_alive(pid):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry.name)
    return removed


class ReleaseConflict(Exception):
    """A different release already exists under the version being published."""


@dataclass(frozen=True)
class ReleaseResult:
    version: str
    path: Path  # releases/<version>
    manifest: dict
    contracts: tuple[ContractResult, ...]  # the runs on the files as written (empty when reused)
    diff: dict | None
    reused: bool  # the version existed with byte-identical task files; nothing was written

    @property
    def warnings(self) -> list:
        return [f for c in self.contracts for f in c.failures if not f.blocking]


def task_file(split: Split | str) -> str:
    return f"tasks/{Split(split).value}.parquet"


def check_version(version: str) -> str:
    if not _VERSION.match(version or ""):
        raise ValueError(f"release version {version!r} must be a semantic version MAJOR.MINOR.PATCH[-pre][+build], "
                         "e.g. 1.2.0 or 1.2.0-rc.1 (it names the release folder and croissant.json's version)")
    return version


def content_version(files: Mapping[str, dict]) -> str:
    """The default version: the package version with the task files' digest as build metadata, so
    rebuilding unchanged inputs lands on the same version and any change on a new one."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        base = package_version("ehr-robustgym")
    except PackageNotFoundError:
        base = "0.0.0"
    digest = hashlib.sha256("".join(f"{p}={h};" for p, h in sorted(_task_hashes(files).items())).encode())
    return f"{base}+{digest.hexdigest()[:12]}"


# ------------------------------------------------------------------------------ latest pointer

def latest_version(releases_dir: Path) -> str | None:
    """The version ``releases/latest`` names (a symlink to the version folder, or on filesystems
    without symlinks a text file holding the version), or None before the first release."""
    pointer = Path(releases_dir) / LATEST
    if pointer.is_symlink():
        return os.readlink(pointer).rstrip("/")
    if pointer.is_file():
        return pointer.read_text().strip() or None
    return None


def resolve_release(releases_dir: Path, version: str = LATEST) -> Path:
    """The folder of ``version`` (``latest`` by default) under ``releases_dir``."""
    releases_dir = Path(releases_dir)
    name = latest_version(releases_dir) if version == LATEST else version
    if name is None:
        raise FileNotFoundError(f"no release has been published under {releases_dir}")
    path = releases_dir / name
    if not (path / "manifest.json").exists():
        raise FileNotFoundError(f"release {name!r} not found under {releases_dir}")
    return path


def set_latest(releases_dir: Path, version: str) -> None:
    """Point ``latest`` at ``version`` atomically (a new link renamed over the old one)."""
    releases_dir = Path(releases_dir)
    tmp = releases_dir / temporary_name(LATEST)
    try:
        os.symlink(version, tmp, target_is_directory=True)
    except OSError:  # no symlinks here (some Windows setups): a text file naming the version
        tmp.write_text(version + "\n")
    try:
        os.replace(tmp, releases_dir / LATEST)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------------- the build

def _source_subjects(source_db: Path) -> set[int]:
    with open_read_only(source_db) as con:
        try:
            return {r[0] for r in con.execute("SELECT DISTINCT subject_id FROM patients").fetchall()}
        except duckdb.CatalogException:
            return set()


def _task_hashes(files: Mapping[str, dict]) -> dict[str, str]:
    return {p: f["sha256"] for p, f in files.items() if p.startswith("tasks/")}


def build_release(tasks: Iterable[Task] | pa.Table, *, source_db: Path, version: str | None, releases_dir: Path,
                  seed: int = 0, config: Mapping | None = None,
                  split_shares: Mapping[str, float] | None = None,
                  noise_shares: Mapping[str, float] | None = None,
                  intents: Sequence[str] | None = None,
                  redistributable: bool | None = None,
                  validate_croissant_records: int = 5,
                  progress: Callable[[str], None] | None = None,
                  score_release: Callable[[Path, Path], Mapping[str, Any]] | None = None,
                  reports: Mapping[str, Any] | None = None) -> ReleaseResult:
    """Split ``tasks``, validate them against the contracts, and publish ``releases_dir/version``.

    ``tasks``: ``Task`` objects, or a table of them in ``pipeline.task_model.arrow_schema()`` (what
    the release candidate's files hold), which is split and written without being decoded.

    ``version``: a semantic version, or None for ``content_version`` (package version + digest).
    ``intents``: the intents that must have tasks (default: every intent the source did not
    disable). ``noise_shares``: the configured noise mix the twins are checked against.
    ``redistributable``: ship the base database or not (default: decided by the source, see
    ``pipeline.release.base_database``). ``score_release(folder, source_db)`` runs on the written
    folder before the card (the release asset passes ``robustgym.floors.release_floors``: the
    reference floors, which the card prints); the keys it returns are added to the manifest.
    ``reports``: what earlier stages found, stated in the manifest and on the card: ``source_audit``
    (``pipeline.source_audit``) and ``noise`` (the noise stage's summaries, one per level).
    Raises ``ContractViolation`` (nothing published) when a
    critical expectation fails, ``ReleaseConflict`` when the version exists with other tasks.
    """
    say = progress or (lambda message: None)
    if version is not None:
        check_version(version)
    releases_dir, source_db = Path(releases_dir), Path(source_db)
    shares = normalise_shares(split_shares)
    with open_read_only(source_db) as con:
        info = read_source_info(con)
    terms = classify_source(info)
    ship = ships_database(terms, redistributable)
    disabled = set(info.details.get("intents_disabled") or [])
    intents = list(intents) if intents is not None else [i.value for i in Intent if i.value not in disabled]
    subjects = _source_subjects(source_db)

    say(f"assigning splits ({', '.join(f'{k} {v:.0%}' for k, v in shares.items())}, seed {seed})")
    table = tasks if isinstance(tasks, pa.Table) else tasks_to_arrow(tasks)
    split_table = with_splits(table, shares=shares, seed=seed, real_subjects=subjects)
    by_split = split_tables(split_table)

    releases_dir.mkdir(parents=True, exist_ok=True)
    abandoned = remove_abandoned(releases_dir)
    if abandoned:
        say(f"removed what killed publishes left in {releases_dir}: {', '.join(abandoned)}")
    previous = latest_version(releases_dir)
    tmp = releases_dir / temporary_name(f"tmp-{version or 'pending'}")
    tmp.mkdir()
    try:
        say(f"writing task files into {tmp.name}")
        for split, table in by_split.items():
            write_tasks(table, tmp / task_file(split))
        written = {split: read_tasks(tmp / task_file(split)) for split in by_split}

        files = {task_file(s): {"sha256": sha256_file(tmp / task_file(s)), "rows": written[s].num_rows}
                 for s in by_split}
        version = version or content_version(files)
        if ship:
            say(f"copying the base database ({source_db.stat().st_size / 1e6:.1f} MB)")
            shutil.copyfile(source_db, tmp / BASE_DATABASE)
        # DuckDB files differ in bytes between identical builds: the content digest is what a
        # reproduction compares (pipeline/release/base_database.py). DuckDB computes it while the
        # contracts (Python) run.
        with BackgroundCall(content_digest, tmp / BASE_DATABASE, name="base-database-digest") if ship \
                else nullcontext() as digesting:
            say("validating the written files against the data contracts")
            union = pa.concat_tables(list(written.values()))
            results = [*check_task_set(union, source_fingerprint=info.fingerprint, intents=intents,
                                       noise_shares=noise_shares),
                       check_release_splits(written, split_shares=shares, real_subjects=subjects)]
            if any(not r.passed for r in results):
                raise ContractViolation(results, f"release {version}")
            digest = None
            if digesting is not None:
                files[BASE_DATABASE] = {"sha256": sha256_file(tmp / BASE_DATABASE), "rows": None}
                digest = digesting.result()

        counts = count_tasks(written)
        manifest = {
            "version": version,
            "created": build_time().isoformat(),
            "source": {"kind": info.kind, "fingerprint": info.fingerprint, "terms": terms.name,
                       "details": info.details},
            "seed": seed,
            "config": {**dict(config or {}),
                       "release": {"split_shares": shares, "noise_shares": dict(noise_shares or {}),
                                   "intents": intents, "redistributable": ship}},
            "generator_version": generator_version(),
            "counts": counts,
            "files": files,
            "schema": schema_description(),
            "base_database": BASE_DATABASE if ship else None,
            "base_database_digest": digest,
            "rebuild_command": None if ship else rebuild_command(info),
            "contracts": [{"contract": r.contract, "expectations": len(r.results),
                           "warnings": [f.describe() for f in r.failures]} for r in results],
            **provenance(info, by_split, reports),
        }
        previous_dir = releases_dir / previous if previous and previous != version else None
        diff = diff_releases(previous_dir if previous_dir and previous_dir.exists() else None,
                             version, written, counts)
        write_diff(tmp, diff)
        write_manifest(tmp, manifest)
        if score_release is not None:
            say("scoring the release (reference floors)")
            manifest.update(score_release(tmp, source_db))
            write_manifest(tmp, manifest)
        write_dataset_card(tmp, render_dataset_card(manifest, terms, diff, tasks=written))
        write_croissant(tmp, build_croissant(manifest, terms, FIELD_DESCRIPTIONS))

        say("verifying the release folder")
        _verify_folder(tmp, manifest, validate_croissant_records)

        final = releases_dir / version
        if final.exists():
            return _existing(final, manifest, tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if final.exists():  # another build published this version meanwhile
                return _existing(final, manifest, tmp)
            raise
        set_latest(releases_dir, version)
        say(f"published {final}")
        return ReleaseResult(version, final, manifest, tuple(results), diff, reused=False)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def provenance(info, by_split: Mapping[str, pa.Table], reports: Mapping[str, Any] | None) -> dict:
    """What the manifest states about where the tasks come from: lossy inputs, the source's own
    anomalies, how the noise was made, and the made-up names and ids per split (read off the release)."""
    from pipeline.noise.report import made_up_values_in
    from pipeline.source_audit import lossy_inputs

    reports = dict(reports or {})
    values: dict[str, dict[str, set[str]]] = {}  # split -> kind -> made-up values its twins use
    for s in Split:
        params = by_split[s.value].column("noise_params").to_pylist()
        for kinds in made_up_values_in({p["name"]: p["value"] for p in ps} for ps in params).values():
            for kind, found in kinds.items():
                values.setdefault(s.value, {}).setdefault(kind, set()).update(found)
    per_split = {split: {kind: len(v) for kind, v in sorted(kinds.items())} for split, kinds in sorted(values.items())}
    every = lambda split: set().union(*values.get(split, {}).values())  # noqa: E731
    held_out = every(Split.VALIDATION.value) | every(Split.TEST.value)
    return {
        "lossy_inputs": [vars(i) for i in lossy_inputs(info)],
        "source_audit": reports.get("source_audit"),
        "noise": {"levels": reports.get("noise") or [],
                  "made_up": {"per_split": per_split,
                              "held_out_also_in_train": len(every(Split.TRAIN.value) & held_out)}},
    }


def _existing(final: Path, manifest: dict, tmp: Path) -> ReleaseResult:
    existing = read_manifest(final)
    ours, theirs = _task_hashes(manifest["files"]), _task_hashes(existing["files"])
    if ours != theirs:
        differing = sorted(p for p in set(ours) | set(theirs) if ours.get(p) != theirs.get(p))
        raise ReleaseConflict(
            f"release {manifest['version']!r} already exists at {final} with different task files "
            f"({', '.join(differing)}); a version is immutable: publish under a new version")
    diff = None
    return ReleaseResult(manifest["version"], final, existing, (), diff, reused=True)


def _verify_folder(folder: Path, manifest: dict, croissant_records: int) -> None:
    for rel, f in manifest["files"].items():
        got = sha256_file(folder / rel)
        if got != f["sha256"]:
            raise RuntimeError(f"{folder / rel}: sha256 {got} differs from the manifest's {f['sha256']}")
    problems = validate_croissant(folder / "croissant.json", read_records=croissant_records)
    if problems:
        raise RuntimeError(f"{folder / 'croissant.json'} does not validate: " + "; ".join(problems))

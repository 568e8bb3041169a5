"""The `release` group: the validated release candidate, and the published release.

``release_candidate`` gathers the clean tasks and twins into pairs, splits them and runs every
task contract on what it wrote; its four contract checks are blocking, so a candidate that breaks a
critical expectation stops the run before ``release`` publishes anything. ``release`` publishes
``releases/<version>/`` atomically (and validates the written files once more while doing so).
"""

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Optional

import dagster as dg
import pyarrow as pa

from assets.automation import REBUILD_AFTER_UPSTREAM
from assets.contract_results import contract_check_name, contract_check_result, source_fingerprint
from assets.gate import gate
from assets.metadata import code_version, distribution, task_table_metadata
from assets.resources import ProjectPaths
from pipeline.contracts import (
    Contract,
    ContractResult,
    ContractViolation,
    ExpectationResult,
    Severity,
    check_release_splits,
    check_task_set,
    results_markdown,
)
from pipeline.duckdb_memory import open_read_only
from pipeline.progress import reporter
from pipeline.release import build_release
from pipeline.release.assembly import collect_pairs
from pipeline.release.diff import diff_markdown
from pipeline.release.manifest import count_tasks, counts_markdown
from pipeline.release.publication import DEFAULT_CREATOR
from pipeline.release.splits import normalise_shares, with_splits
from pipeline.release.task_files import read_tasks, split_tables, write_tasks
from pipeline.source_db import read_source_info
from pipeline.vocabulary import AssetName, Group, Intent, NoiseLevel, NoiseType, Split

CANDIDATE_DIR = "release_candidate"
SETTINGS = "settings.json"


CONTRACT_CHECKS = [contract_check_name(c) for c in Contract]
CODE_VERSION = code_version("pipeline.release", "pipeline.contracts")
TAGS = {"stage": Group.RELEASE.value}


class ReleaseCandidateConfig(dg.Config):
    """How tasks are split, and the noise mix the twins are checked against."""

    seed: int = 0
    train_share: float = 0.8
    validation_share: float = 0.1
    test_share: float = 0.1
    # The noise mix, as the noise stage is configured (same names as noise_pairs' config, so a setting
    # given to both reaches both): share per noise level, per type within its level; empty: equal.
    level_shares: dict[str, float] = {}
    type_shares: dict[str, float] = {}
    # Or the share per noise type directly (overrides the two above).
    noise_type_shares: dict[str, float] = {}


class ReleaseConfig(dg.Config):
    """The version to publish, whether the base database ships with it, and where it is published."""

    # A semantic version (e.g. 1.2.0); empty: the package version with the content digest (1.2.0+3fa9c1e0b2d4).
    version: str = ""
    # Ship base.duckdb: empty decides by source (synthetic and demo yes, credentialed MIMIC-IV no).
    redistributable: Optional[bool] = None
    # Where the release can be found (croissant.json's url, the card's citation); empty: stated nowhere.
    url: str = ""
    # Who publishes it (croissant.json's creator, the card's BibTeX author).
    creator: str = DEFAULT_CREATOR


def publication_config(config: ReleaseConfig) -> dict:
    """``manifest.config.publication``: what the card and croissant.json say about who publishes it, where."""
    return {"url": config.url, "creator": config.creator}


def configured_noise_shares(config: ReleaseCandidateConfig) -> dict[str, float]:
    """Share per noise type the twins are checked against."""
    if config.noise_type_shares:
        return dict(config.noise_type_shares)
    from pipeline.noise.mix import NoiseConfig

    given = {k: v for k, v in (("level_shares", config.level_shares), ("type_shares", config.type_shares)) if v}
    noise = NoiseConfig(**given)
    return {t.value: noise.share(t) for t in NoiseType if noise.share(t) > 0}


def _not_evaluated(why: str) -> ContractResult:
    return ContractResult(Contract.RELEASE_SPLITS.value, (ExpectationResult(
        Contract.RELEASE_SPLITS.value, "tasks", "(not evaluated)", None, Severity.CRITICAL,
        "splits are assigned only to tasks that meet the task contracts", False, error=why),))


def candidate_dir(paths: ProjectPaths) -> Path:
    return paths.data / CANDIDATE_DIR


def _answers_per_intent(tasks: pa.Table) -> dg.TableMetadataValue:
    cols = tasks.select(["intent", "level", "answer_type", "variant"]).to_pydict()
    per = Counter((i, lv, a) for i, lv, a, v in zip(*cols.values()) if v == "clean")
    return distribution([("intent", "string"), ("level", "string"), ("answer_type", "string"), ("tasks", "int")],
                        [(*k, n) for k, n in sorted(per.items(), key=lambda kv: (list(Intent).index(kv[0][0]),
                                                                                  kv[0][1:]))])


def _noise_mix(counts: dict) -> dg.TableMetadataValue:
    per: Counter = Counter()
    for cell in counts["by_category"]:
        per[(cell["noise_type"], cell["split"])] += cell["tasks"]
    types = [n.value for n in NoiseType if any(k[0] == n.value for k in per)]
    return distribution([("noise_type", "string")] + [(s.value, "int") for s in Split],
                        [(n, *(per[(n, s.value)] for s in Split)) for n in types])


@dg.asset(
    name=AssetName.RELEASE_CANDIDATE.value, group_name=Group.RELEASE.value, kinds={"parquet"},
    code_version=CODE_VERSION, tags=TAGS, automation_condition=REBUILD_AFTER_UPSTREAM,
    deps=[AssetName.CLEAN_TASKS.value, AssetName.NOISE_PAIRS.value, AssetName.SOURCE_DATABASE.value],
    check_specs=[dg.AssetCheckSpec(name, asset=AssetName.RELEASE_CANDIDATE.value, blocking=True,
                                   description=f"data_contracts/{c.value}.json on the release candidate")
                 for name, c in zip(CONTRACT_CHECKS, Contract)],
)
def release_candidate(context: dg.AssetExecutionContext, config: ReleaseCandidateConfig,
                      paths: ProjectPaths) -> dg.MaterializeResult:
    """Clean-Noise pairs with train/validation/test splits, checked against every data contract."""
    pairs = collect_pairs(paths.clean_tasks_dir, paths.noise_dir)
    with open_read_only(paths.source_db) as con:
        info = read_source_info(con)
        subjects = {r[0] for r in con.execute("SELECT DISTINCT subject_id FROM patients").fetchall()}
    disabled = set(info.details.get("intents_disabled") or [])
    intents = [i.value for i in Intent if i.value not in disabled]
    noise_shares = configured_noise_shares(config)
    shares = normalise_shares({"train": config.train_share, "validation": config.validation_share,
                               "test": config.test_share})
    target = candidate_dir(paths)
    shutil.rmtree(target, ignore_errors=True)  # a stale candidate must never be published

    results = check_task_set(pairs.tasks, source_fingerprint=info.fingerprint, intents=intents,
                             noise_shares=noise_shares)
    metadata = {"clean_tasks": pairs.clean.num_rows, "twins": pairs.twins.num_rows,
                "clean_tasks_without_twin_left_out": len(pairs.unpaired)}
    if all(r.passed for r in results):
        tasks = with_splits(pairs.tasks, shares=shares, seed=config.seed, real_subjects=subjects)
        tmp = target.with_name(target.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        for split, table in split_tables(tasks).items():
            write_tasks(table, tmp / f"{split}.parquet")
        (tmp / SETTINGS).write_text(json.dumps({
            "seed": config.seed, "split_shares": shares, "noise_shares": noise_shares, "intents": intents,
            "source_fingerprint": info.fingerprint}, indent=2, sort_keys=True))
        written = {s.value: read_tasks(tmp / f"{s.value}.parquet") for s in Split}
        results.append(check_release_splits(written, split_shares=shares, real_subjects=subjects))
        if results[-1].passed:
            tmp.rename(target)
            counts = count_tasks(written)
            metadata |= {**task_table_metadata(counts["total"]), "by_split": counts["by_split"],
                         "counts": dg.MetadataValue.md(counts_markdown(counts)),
                         "noise_mix": _noise_mix(counts),
                         "answers_per_intent": _answers_per_intent(tasks),
                         "path": dg.MetadataValue.path(str(target))}
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        results.append(_not_evaluated("the task contracts failed, so no splits were assigned"))
    for r in results:
        (context.log.info if r.passed else context.log.error)(r.summary())
    check_results = gate(context, [contract_check_result(r) for r in results])
    return dg.MaterializeResult(metadata=metadata, check_results=check_results)


def stage_reports(paths: ProjectPaths) -> dict:
    """What the source audit and the noise stage found, for the manifest and the card."""
    from pipeline.noise.report import summary_path
    from pipeline.source_audit import read_audit

    audit = read_audit(paths.source_audit).to_dict() if paths.source_audit.exists() else None
    if audit is not None:
        audit.pop("integrity", None)  # the loader's own findings stay in the source database's metadata
        for c in audit["counts"]:
            c["examples"] = c["examples"][:1]
    fingerprint = source_fingerprint(paths)
    noise = [summary for level in NoiseLevel if summary_path(paths.noise_dir, level).exists()
             for summary in [json.loads(summary_path(paths.noise_dir, level).read_text())]
             if summary.get("base_fingerprint") == fingerprint]
    return {"source_audit": audit, "noise": noise}


def read_candidate(paths: ProjectPaths) -> tuple[pa.Table, dict]:
    folder = candidate_dir(paths)
    if not (folder / SETTINGS).exists():
        raise dg.Failure(f"no validated release candidate at {folder}: materialize "
                         f"{AssetName.RELEASE_CANDIDATE.value} first (a candidate that broke a contract is removed)")
    settings = json.loads((folder / SETTINGS).read_text())
    tasks = pa.concat_tables([read_tasks(folder / f"{s.value}.parquet") for s in Split])
    return tasks, settings


@dg.asset(name=AssetName.RELEASE.value, group_name=Group.RELEASE.value, kinds={"parquet"},
          code_version=CODE_VERSION, tags=TAGS, automation_condition=REBUILD_AFTER_UPSTREAM,
          deps=[AssetName.RELEASE_CANDIDATE.value])
def release(context: dg.AssetExecutionContext, config: ReleaseConfig, paths: ProjectPaths) -> dg.MaterializeResult:
    """The published release: a folder releases/VERSION with task files, manifest, dataset card and croissant."""
    from robustgym.floors import release_floors  # the card prints the floors; pipeline never imports robustgym

    tasks, settings = read_candidate(paths)
    try:
        result = build_release(
            tasks, source_db=paths.source_db, version=config.version or None, releases_dir=paths.releases,
            seed=settings["seed"], split_shares=settings["split_shares"], noise_shares=settings["noise_shares"],
            intents=settings["intents"], redistributable=config.redistributable,
            config={"release_candidate": settings, "publication": publication_config(config)},
            progress=reporter(context.log.info), score_release=release_floors, reports=stage_reports(paths))
    except ContractViolation as e:
        failures = [f for r in e.results for f in r.failures]
        raise dg.Failure(description=str(e), metadata={"failures": dg.MetadataValue.md(results_markdown(failures))})
    m = result.manifest
    return dg.MaterializeResult(metadata={
        "version": result.version,
        "path": dg.MetadataValue.path(str(result.path)),
        "reused": result.reused,
        **task_table_metadata(m["counts"]["total"]),
        "by_split": m["counts"]["by_split"],
        "counts": dg.MetadataValue.md(counts_markdown(m["counts"])),
        "noise_mix": _noise_mix(m["counts"]),
        "diff": dg.MetadataValue.md(diff_markdown(result.diff) if result.diff else "identical rebuild: unchanged"),
        "base_database": m["base_database"] or f"not shipped; rebuild: {m['rebuild_command']}",
        "source_fingerprint": m["source"]["fingerprint"],
        "floors": dg.MetadataValue.json(m.get("floors") or {}),
    })


ASSETS = [release_candidate, release]

"""Checks that re-read what the noise stage wrote."""

from collections import Counter

import dagster as dg
import duckdb

from assets.contract_results import contract_check_result, source_fingerprint
from assets.noise.assets import NoiseCheck
from assets.resources import ProjectPaths
from pipeline.contracts import Contract, check_noisy_twins, check_pairs, split_by_variant
from pipeline.noise.recheck import recheck_twin
from pipeline.noise.task_files import read_clean_tasks, read_twins, twins_path
from pipeline.release.assembly import pair_up, read_task_files, task_files
from pipeline.templates import REGISTRY
from pipeline.vocabulary import AssetName, NoiseLevel

RECHECK_PER_TYPE = 10  # gold SQL can be costly on the full MIMIC-IV: a few twins per noise type


# Not partitioned (partitioned checks are a Dagster preview feature): it re-reads every level's file
# present, which after a partition's run includes that partition.
@dg.asset_check(asset=AssetName.NOISE_PAIRS.value, name=NoiseCheck.TWINS_RECHECK, blocking=True)
def twins_recheck(paths: ProjectPaths) -> dg.AssetCheckResult:
    """Stored twins still show their noise when their patch or changed question is re-run on the source database."""
    files = [twins_path(paths.noise_dir, level) for level in NoiseLevel]
    twins = [t for f in files if f.exists() for t in read_twins(f)]
    clean = {t.task_id: t for t in read_clean_tasks(paths.clean_tasks_dir)}
    per_type: Counter = Counter()
    sample = []
    for twin in twins:
        if per_type[twin.noise_type] < RECHECK_PER_TYPE:
            per_type[twin.noise_type] += 1
            sample.append(twin)
    failures = []
    with duckdb.connect(str(paths.source_db), read_only=True) as con:
        catalog = con.execute("SELECT current_database()").fetchone()[0]
        for twin in sample:
            parent = clean.get(twin.clean_task_id)
            if parent is None:
                failures.append((twin.task_id, "its clean task is not among the clean task files"))
                continue
            r = recheck_twin(con, parent, twin, REGISTRY.get(twin.template_id), catalog)
            if r.problem:
                failures.append((twin.task_id, r.problem))
    rows = ["| twin | problem |", "| --- | --- |"] + [f"| {i} | {p} |" for i, p in failures[:20]]
    # Nothing re-checked proves nothing: an empty check fails.
    return dg.AssetCheckResult(passed=bool(sample) and not failures, metadata={
        "level_files": sum(f.exists() for f in files), "twins_rechecked": len(sample), "failures": len(failures),
        "examples": dg.MetadataValue.md("\n".join(rows) if failures else "none")})


# Like clean_tasks_contract, not partitioned: after each noise level's run it re-reads every level
# file written so far. The mix is checked on the release candidate, once every level is built.
@dg.multi_asset_check(
    specs=[dg.AssetCheckSpec(f"{c.value}_contract", asset=AssetName.NOISE_PAIRS.value, blocking=True,
                             description=f"data_contracts/{c.value}.json on the twins written so far")
           for c in (Contract.NOISY_TWINS, Contract.PAIRS)],
)
def noise_contracts(paths: ProjectPaths):
    """Twins meet their contract (proof, patch, vocabulary), and each names a clean task that exists."""
    twins = read_task_files(task_files(paths.noise_dir))
    clean = read_task_files(task_files(paths.clean_tasks_dir))
    if twins is None or clean is None:
        for c in (Contract.NOISY_TWINS, Contract.PAIRS):
            yield dg.AssetCheckResult(check_name=f"{c.value}_contract", passed=False,
                                      asset_key=AssetName.NOISE_PAIRS.value, severity=dg.AssetCheckSeverity.ERROR,
                                      metadata={"problem": f"no task files under {paths.noise_dir} or "
                                                           f"{paths.clean_tasks_dir}"})
        return
    asset = AssetName.NOISE_PAIRS.value
    yield contract_check_result(check_noisy_twins(twins, source_fingerprint=source_fingerprint(paths)), asset)
    # Only the clean tasks some twin names: the others are not pairs and never reach a release.
    pairs = pair_up(split_by_variant(clean)[0], twins)
    yield contract_check_result(check_pairs(pairs.clean, pairs.twins), asset)


CHECKS = [twins_recheck, noise_contracts]

"""The `noise` group: noisy twins of the clean tasks, one partition per noise level."""

import statistics

import dagster as dg
import pyarrow.parquet as pq

from assets.automation import REBUILD_AFTER_UPSTREAM
from assets.contract_results import source_fingerprint
from assets.gate import gate, partitioned_check, pending_path, promote
from assets.metadata import code_version, distribution, task_table_metadata
from assets.noise import checks
from assets.noise.checks import NoiseCheck
from assets.resources import ProjectPaths
from pipeline.background import BackgroundCall
from pipeline.noise import NoiseConfig, build_pairs
from pipeline.noise.report import drops_markdown, excluded_markdown, noise_summary, pairs_markdown, \
    skipped_markdown, summary_path, write_summary
from pipeline.source_audit import read_audit, read_flagged
from pipeline.noise.task_files import clean_task_files, read_clean_tasks, twins_path, write_twins
from pipeline.progress import reporter
from pipeline.release.assembly import read_task_files
from pipeline.release.task_files import read_tasks
from pipeline.task_model import tasks_from_arrow
from pipeline.vocabulary import NOISE_LEVEL_OF, AssetName, Group, NoiseLevel, NoiseType

LEVEL_PARTITIONS = dg.StaticPartitionsDefinition([level.value for level in NoiseLevel])
CODE_VERSION = code_version("pipeline.noise", "pipeline.patching", "pipeline.answers")


class NoisePairsConfig(dg.Config):
    """How many pairs to build, the mix over noise levels and types, and the seed."""

    target_pairs: int = 5486
    seed: int = 0
    # Share per noise level and per noise type within its level; empty: equal shares.
    level_shares: dict[str, float] = {}
    type_shares: dict[str, float] = {}
    tolerance: float = 0.05
    sample_pairs_per_type: int = 2
    # The release's split shares (same names as release_candidate's config, so a setting reaches both):
    # a twin draws made-up names and ids from the pool of the split its clean task will be in.
    train_share: float = 0.8
    validation_share: float = 0.1
    test_share: float = 0.1

    def noise_config(self) -> NoiseConfig:
        given = {}
        if self.level_shares:
            given["level_shares"] = self.level_shares
        if self.type_shares:
            given["type_shares"] = self.type_shares
        shares = {"train": self.train_share, "validation": self.validation_share, "test": self.test_share}
        return NoiseConfig(target_pairs=self.target_pairs, tolerance=self.tolerance, split_shares=shares, **given)


def foreign_clean_task_files(paths: ProjectPaths, fingerprint: str) -> list[str]:
    """Clean task files built on another source database than the current one."""
    foreign = []
    for f in clean_task_files(paths.clean_tasks_dir):
        column = pq.read_table(str(f), columns=["base_fingerprint"]).column("base_fingerprint")
        if any(v != fingerprint for v in column.unique().to_pylist()):
            foreign.append(f.name)
    return foreign


def reference_difficulty(paths: ProjectPaths, clean, twins, fingerprint: str, seed: int) -> dict:
    """How the rule-based reference agents fare on a sample of this level's twins per noise type and
    mechanism (robustgym.difficulty); pipeline/ never imports robustgym, this layer passes the tasks."""
    from robustgym.difficulty import score_difficulty

    named = {t.clean_task_id for t in twins}
    return score_difficulty([t for t in clean if t.task_id in named] + list(twins), paths.source_db, fingerprint,
                            seed=seed)


def _difficulty_table(difficulty: dict) -> dg.TableMetadataValue:
    rows = [(agent, c["noise_type"], c["mechanism"], c["twins"], c["success"])
            for agent, cells in difficulty.get("agents", {}).items() for c in cells]
    return distribution([("agent", "string"), ("noise_type", "string"), ("mechanism", "string"), ("twins", "int"),
                         ("success", "float")], rows)


def _mix_table(result, types) -> dg.TableMetadataValue:
    per_type = result.mix.by("noise_type")
    drift = result.mix.drift()
    return distribution([("noise_type", "string"), ("twins", "int"), ("target", "int"), ("drift", "float")],
                        [(t.value, per_type.get(t, 0), result.mix.targets.get(t, 0), round(drift.get(t, 0.0), 4))
                         for t in types])


@dg.asset(
    name=AssetName.NOISE_PAIRS.value, group_name=Group.NOISE.value, kinds={"parquet", "duckdb"},
    code_version=CODE_VERSION, tags={"stage": Group.NOISE.value}, partitions_def=LEVEL_PARTITIONS,
    # Every intent's clean tasks, all of them: a noise level never starts before the last intent is built.
    deps=[dg.AssetDep(AssetName.CLEAN_TASKS.value, partition_mapping=dg.AllPartitionMapping()),
          AssetName.SOURCE_DATABASE.value, AssetName.SOURCE_ANOMALIES.value],
    automation_condition=REBUILD_AFTER_UPSTREAM,
    check_specs=[
        partitioned_check(NoiseCheck.TWINS_PROVEN, AssetName.NOISE_PAIRS.value, LEVEL_PARTITIONS, blocking=True),
        partitioned_check(NoiseCheck.EVERY_TYPE_BUILT, AssetName.NOISE_PAIRS.value, LEVEL_PARTITIONS),
        partitioned_check(NoiseCheck.MIX_WITHIN_TOLERANCE, AssetName.NOISE_PAIRS.value, LEVEL_PARTITIONS),
        partitioned_check(NoiseCheck.TWINS_RECHECK, AssetName.NOISE_PAIRS.value, LEVEL_PARTITIONS, blocking=True,
                          description="up to 10 written twins per noise type re-checked on the source"),
        partitioned_check(NoiseCheck.LABELS_DECIDABLE, AssetName.NOISE_PAIRS.value, LEVEL_PARTITIONS, blocking=True,
                          description="every twin's accepted outcomes follow from its noisy record alone"),
        partitioned_check(NoiseCheck.VALUE_NOISE_REALISTIC, AssetName.NOISE_PAIRS.value, LEVEL_PARTITIONS,
                          blocking=True, description="value noise: no mechanism above 40%, no replacement value "
                                                     "above 5% of one item's twins"),
        partitioned_check(NoiseCheck.NOISY_TWINS_CONTRACT, AssetName.NOISE_PAIRS.value, LEVEL_PARTITIONS,
                          blocking=True, description="data_contracts/noisy_twins.json on this level's twins"),
        partitioned_check(NoiseCheck.PAIRS_CONTRACT, AssetName.NOISE_PAIRS.value, LEVEL_PARTITIONS,
                          blocking=True, description="data_contracts/pairs.json on this level's twins"),
    ],
)
def noise_pairs(context: dg.AssetExecutionContext, config: NoisePairsConfig,
                paths: ProjectPaths) -> dg.MaterializeResult:
    """Noisy twins of one noise level (record, value or query), each with its patch or changed question and proof."""
    level = NoiseLevel(context.partition_key)
    fingerprint = source_fingerprint(paths)
    foreign = foreign_clean_task_files(paths, fingerprint)
    if foreign:
        raise dg.Failure(f"clean task files built on another source database: {', '.join(foreign)} in "
                         f"{paths.clean_tasks_dir}; materialize {AssetName.CLEAN_TASKS.value} (every intent) first")
    clean = read_clean_tasks(paths.clean_tasks_dir)
    audit = read_audit(paths.source_audit) if paths.source_audit.exists() else None
    flagged = read_flagged(paths.source_flagged_rows) if audit is not None and audit.fingerprint == fingerprint \
        else None
    result = build_pairs(paths.source_db, clean, config.noise_config(), seed=config.seed, levels=[level],
                         progress=reporter(context.log.info), flagged=flagged)
    summary = noise_summary(result, level)
    path = twins_path(paths.noise_dir, level)
    pending = pending_path(path)
    # The reference agents' SQL runs in the sandbox's own process: they play while this step checks.
    with BackgroundCall(reference_difficulty, paths, clean, result.twins, fingerprint, config.seed,
                        name=f"reference-agents-{level.value}") as difficulty:
        write_twins(result.twins, pending)
        written = read_tasks(pending)  # the checks read this level's twins as written
        twins = tasks_from_arrow(written)
        types = [t for t in NoiseType if NOISE_LEVEL_OF[t] is level]
        clean_table = read_task_files(clean_task_files(paths.clean_tasks_dir))
        results = [
            checks.twins_proven(twins),
            checks.every_type_built(types, result.mix.by("noise_type")),
            checks.mix_within_tolerance(result.mix, types, config.tolerance),
            checks.twins_recheck(paths.source_db, twins, {t.task_id: t for t in clean}),
            checks.labels_decidable(paths.source_db, twins, {t.task_id: t for t in clean}, flagged,
                                    result.label_decisions),
            checks.value_noise_realistic(summary, level),
            *checks.noise_contracts(written, clean_table, fingerprint),
        ]
        summary["difficulty"] = difficulty.result()
    write_summary(summary, summary_path(paths.noise_dir, level))
    check_results = gate(context, results, pending)
    promote(pending, path)
    return dg.MaterializeResult(
        metadata={
            **task_table_metadata(len(twins)),
            "clean_tasks_with_twins": len({t.clean_task_id for t in twins}),
            "noise_mix": _mix_table(result, types),
            "counts_intent_level_noise_type": dg.MetadataValue.md(result.mix.markdown()),
            "dropped": sum(result.dropped.values()),
            "dropped_why": dg.MetadataValue.md(drops_markdown(result)),
            "not_applicable": dg.MetadataValue.md(skipped_markdown(result)),
            "sample_pairs": dg.MetadataValue.md(pairs_markdown(result.pairs(clean), config.sample_pairs_per_type,
                                                              config.seed)),
            "value_error_mechanisms": distribution(
                [("noise_type", "string"), ("mechanism", "string"), ("twins", "int")],
                [(t, m, n) for t, by in summary["mechanisms"].items() for m, n in by.items()]),
            "made_up_pools": distribution(
                [("split", "string"), ("kind", "string"), ("values", "int")],
                [(sp, k, n) for sp, by in summary["made_up_pools"].items() for k, n in by.items()]),
            "clean_tasks_left_out": dg.MetadataValue.md(excluded_markdown(result)),
            "reference_agents": _difficulty_table(summary["difficulty"]),
            "label_check": dg.MetadataValue.md(
                f"{summary['label_not_decidable']} candidate(s) dropped: their record alone did not support "
                f"the outcomes they would have accepted (pipeline/noise/status_rules.py)"),
            "median_proof_ms": round(statistics.median(result.proof_ms), 2) if result.proof_ms else 0.0,
            "base_fingerprint": fingerprint,
            "path": dg.MetadataValue.path(str(path)),
        },
        check_results=check_results,
    )


ASSETS = [noise_pairs]
CHECKS: list = []  # every check of the stage runs inside its asset's step (assets/gate.py)

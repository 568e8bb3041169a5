"""The `noise` group: noisy twins of the clean tasks, one partition per noise level."""

import statistics

import dagster as dg

from assets.resources import ProjectPaths
from pipeline.noise import NoiseConfig, build_pairs
from pipeline.noise.report import drops_markdown, pairs_markdown, skipped_markdown
from pipeline.noise.task_files import read_clean_tasks, twins_path, write_twins
from pipeline.vocabulary import NOISE_LEVEL_OF, AssetName, Group, NoiseLevel, NoiseType

LEVEL_PARTITIONS = dg.StaticPartitionsDefinition([level.value for level in NoiseLevel])


class NoiseCheck:
    """Names of the checks the noise stage runs (referenced by the tests and the UI)."""

    TWINS_PROVEN = "twins_proven"
    EVERY_TYPE_BUILT = "every_noise_type_built"
    MIX_WITHIN_TOLERANCE = "mix_within_tolerance"
    TWINS_RECHECK = "twins_recheck"


class NoisePairsConfig(dg.Config):
    """How many pairs to build, the mix over noise levels and types, and the seed."""

    target_pairs: int = 5486
    seed: int = 0
    # Share per noise level and per noise type within its level; empty: equal shares.
    level_shares: dict[str, float] = {}
    type_shares: dict[str, float] = {}
    tolerance: float = 0.05
    sample_pairs_per_type: int = 2

    def noise_config(self) -> NoiseConfig:
        given = {}
        if self.level_shares:
            given["level_shares"] = self.level_shares
        if self.type_shares:
            given["type_shares"] = self.type_shares
        return NoiseConfig(target_pairs=self.target_pairs, tolerance=self.tolerance, **given)


def proof_problems(twins) -> list[str]:
    """Twins that could not be published: no passing proof, no outcome, or a patch at the wrong level."""
    problems = []
    for t in twins:
        if t.proof is None or not t.proof.passed:
            problems.append(f"{t.task_id}: no passing proof")
        elif not t.accepted_outcomes or t.expected_status not in {o.status for o in t.accepted_outcomes}:
            problems.append(f"{t.task_id}: the expected status is not an accepted outcome")
        elif (t.noise_level is NoiseLevel.QUERY) != t.patch.is_empty:
            problems.append(f"{t.task_id}: a {t.noise_level.value}-level twin with the wrong kind of patch")
    return problems


@dg.asset(
    name=AssetName.NOISE_PAIRS.value, group_name=Group.NOISE.value, kinds={"parquet", "duckdb"},
    partitions_def=LEVEL_PARTITIONS,
    deps=[dg.AssetDep(AssetName.CLEAN_TASKS.value, partition_mapping=dg.AllPartitionMapping()),
          AssetName.SOURCE_DATABASE.value],
    check_specs=[
        dg.AssetCheckSpec(NoiseCheck.TWINS_PROVEN, asset=AssetName.NOISE_PAIRS.value, blocking=True),
        dg.AssetCheckSpec(NoiseCheck.EVERY_TYPE_BUILT, asset=AssetName.NOISE_PAIRS.value),
        dg.AssetCheckSpec(NoiseCheck.MIX_WITHIN_TOLERANCE, asset=AssetName.NOISE_PAIRS.value),
    ],
)
def noise_pairs(context: dg.AssetExecutionContext, config: NoisePairsConfig,
                paths: ProjectPaths) -> dg.MaterializeResult:
    """Noisy twins of one noise level (record, value or query), each with its patch or changed question and proof."""
    level = NoiseLevel(context.partition_key)
    clean = read_clean_tasks(paths.clean_tasks_dir)
    result = build_pairs(paths.source_db, clean, config.noise_config(), seed=config.seed, levels=[level],
                         progress=context.log.info)
    path = twins_path(paths.noise_dir, level)
    write_twins(result.twins, path)
    types = [t for t in NoiseType if NOISE_LEVEL_OF[t] is level]
    per_type = result.mix.by("noise_type")
    missing = [t.value for t in types if not per_type.get(t)]
    problems = proof_problems(result.twins)
    drift = {t.value: round(d, 4) for t, d in result.mix.drift().items() if t in types}
    return dg.MaterializeResult(
        metadata={
            "twins": len(result.twins),
            "target": sum(result.mix.targets.values()),
            "clean_tasks_read": len(clean),
            "clean_tasks_with_twins": len({t.clean_task_id for t in result.twins}),
            "per_noise_type": {t.value: per_type.get(t, 0) for t in types},
            "counts_intent_level_noise_type": dg.MetadataValue.md(result.mix.markdown()),
            "dropped": sum(result.dropped.values()),
            "dropped_why": dg.MetadataValue.md(drops_markdown(result)),
            "not_applicable": dg.MetadataValue.md(skipped_markdown(result)),
            "sample_pairs": dg.MetadataValue.md(pairs_markdown(result.pairs(clean), config.sample_pairs_per_type,
                                                              config.seed)),
            "median_proof_ms": round(statistics.median(result.proof_ms), 2) if result.proof_ms else 0.0,
            "path": dg.MetadataValue.path(str(path)),
        },
        check_results=[
            dg.AssetCheckResult(check_name=NoiseCheck.TWINS_PROVEN, passed=bool(result.twins) and not problems,
                                metadata={"twins": len(result.twins), "problems": len(problems),
                                          "examples": dg.MetadataValue.md(
                                              "\n".join(f"- {p}" for p in problems[:20]) or "none")}),
            dg.AssetCheckResult(check_name=NoiseCheck.EVERY_TYPE_BUILT, passed=not missing,
                                severity=dg.AssetCheckSeverity.WARN,
                                metadata={"without_twins": ", ".join(missing) or "none"}),
            dg.AssetCheckResult(check_name=NoiseCheck.MIX_WITHIN_TOLERANCE, passed=result.mix.within_tolerance,
                                severity=dg.AssetCheckSeverity.WARN,
                                metadata={"tolerance": config.tolerance, "drift_per_type": drift}),
        ],
    )


ASSETS = [noise_pairs]

"""The noise stage's checks, evaluated per noise level on the partition's own output as written.

They run inside ``noise_pairs``' step on its pending file (see ``assets/gate.py``): a level's checks
read that level's twins from this run (and the clean tasks they name), never another level's file.
"""

from collections import Counter

import dagster as dg
import pyarrow as pa

from assets.contract_results import contract_check_result
from assets.gate import EVIDENCE
from pipeline.contracts import Contract, check_noisy_twins, check_pairs
from pipeline.duckdb_memory import small_statement_reader
from pipeline.noise.decidability import check_labels
from pipeline.noise.recheck import recheck_twin
from pipeline.release.assembly import pair_up
from pipeline.task_model import Task
from pipeline.templates import REGISTRY
from pipeline.vocabulary import NoiseLevel

RECHECK_PER_TYPE = 10  # gold SQL can be costly on the full MIMIC-IV: a few twins per noise type


class NoiseCheck:
    """Names of the checks the noise stage runs (referenced by the tests and the UI)."""

    TWINS_PROVEN = "twins_proven"
    EVERY_TYPE_BUILT = "every_noise_type_built"
    MIX_WITHIN_TOLERANCE = "mix_within_tolerance"
    TWINS_RECHECK = "twins_recheck"
    LABELS_DECIDABLE = "labels_decidable"
    VALUE_NOISE_REALISTIC = "value_noise_realistic"
    NOISY_TWINS_CONTRACT = f"{Contract.NOISY_TWINS.value}_contract"
    PAIRS_CONTRACT = f"{Contract.PAIRS.value}_contract"


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


def twins_proven(twins: list[Task]) -> dg.AssetCheckResult:
    problems = proof_problems(twins)
    metadata = {"problems": len(problems),
                "examples": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems[:20]) or "none")}
    if problems or not twins:
        metadata[EVIDENCE] = (f"{len(problems)} of {len(twins)} twins unproven, e.g. {problems[0]}" if problems
                              else "no twin was built")
    return dg.AssetCheckResult(check_name=NoiseCheck.TWINS_PROVEN, passed=bool(twins) and not problems,
                               metadata=metadata)


def every_type_built(types, per_type: Counter) -> dg.AssetCheckResult:
    missing = [t.value for t in types if not per_type.get(t)]
    metadata = {"without_twins": ", ".join(missing) or "none"}
    if missing:
        metadata[EVIDENCE] = f"{len(missing)} noise type(s) without twins: {', '.join(missing)}"
    return dg.AssetCheckResult(check_name=NoiseCheck.EVERY_TYPE_BUILT, passed=not missing,
                               severity=dg.AssetCheckSeverity.WARN, metadata=metadata)


def mix_within_tolerance(mix, types, tolerance: float) -> dg.AssetCheckResult:
    drift = {t.value: round(d, 4) for t, d in mix.drift().items() if t in types}
    metadata = {"tolerance": dg.MetadataValue.text(str(tolerance)), "drift_per_type": drift}
    if not mix.within_tolerance:
        worst = max(drift, key=lambda k: abs(drift[k]))
        metadata[EVIDENCE] = f"share of {worst} off its target by {drift[worst]:+.3f} (tolerance {tolerance})"
    return dg.AssetCheckResult(check_name=NoiseCheck.MIX_WITHIN_TOLERANCE, passed=mix.within_tolerance,
                               severity=dg.AssetCheckSeverity.WARN, metadata=metadata)


def twins_recheck(source_db, twins: list[Task], clean: dict[str, Task]) -> dg.AssetCheckResult:
    """Stored twins still show their noise when their patch or changed question is re-run on the source."""
    per_type: Counter = Counter()
    sample = []
    for twin in twins:
        if per_type[twin.noise_type] < RECHECK_PER_TYPE:
            per_type[twin.noise_type] += 1
            sample.append(twin)
    failures = []
    with small_statement_reader(source_db) as con:
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
    metadata = {"twins_rechecked": len(sample), "failures": len(failures),
                "examples": dg.MetadataValue.md("\n".join(rows) if failures else "none")}
    if failures:
        metadata[EVIDENCE] = f"{len(failures)} of {len(sample)} re-checked twins fail, e.g. {failures[0][0]}: " \
                             f"{failures[0][1]}"
    elif not sample:
        metadata[EVIDENCE] = "no twin to re-check"
    # Nothing re-checked proves nothing: an empty check fails.
    return dg.AssetCheckResult(check_name=NoiseCheck.TWINS_RECHECK, passed=bool(sample) and not failures,
                               metadata=metadata)


def noise_contracts(written: pa.Table, clean: pa.Table, fingerprint: str) -> list[dg.AssetCheckResult]:
    """The twins meet their contract (proof, patch, vocabulary), and each names a clean task that
    exists; only the clean tasks some twin of this level names are paired (the others are not pairs)."""
    pairs = pair_up(clean, written)
    return [contract_check_result(check_noisy_twins(written, source_fingerprint=fingerprint)),
            contract_check_result(check_pairs(pairs.clean, pairs.twins))]


def labels_decidable(source_db, twins: list[Task], clean: dict[str, Task], flagged=None,
                     known=None) -> dg.AssetCheckResult:
    """Every twin's accepted outcomes (and every named clean task's answer) are what its record alone
    supports (pipeline/noise/status_rules.py), read without the noise type or parameters. ``known``: the
    builder's decisions, reused for written twins identical to the ones it decided."""
    named = [clean[i] for i in sorted({t.clean_task_id for t in twins}) if i in clean]
    result = check_labels(source_db, [*named, *twins], flagged=flagged, known=known)
    rows = ["| task | problem |", "| --- | --- |"] + [f"| {i} | {p.replace('|', '/')} |" for i, p in result.problems[:20]]
    metadata = {"tasks_checked": result.checked, "decisions_reused": result.reused,
                "reused_decisions_read_again": result.audited, "problems": len(result.problems),
                "deciding_rules": dg.MetadataValue.md("\n".join(f"- {r}: {n}" for r, n in result.rules.most_common())),
                "examples": dg.MetadataValue.md("\n".join(rows) if result.problems else "none")}
    if not result.passed:
        metadata[EVIDENCE] = (f"{len(result.problems)} of {result.checked} tasks' outcomes not supported by their "
                              f"record, e.g. {result.problems[0][0]}: {result.problems[0][1]}" if result.problems
                              else "nothing was checked")
    return dg.AssetCheckResult(check_name=NoiseCheck.LABELS_DECIDABLE, passed=result.passed, metadata=metadata)


MAX_MECHANISM_SHARE = 0.40  # no error mechanism above this share of a value-level noise type's twins
MIN_TWINS_FOR_SHARES = 50  # below this many twins of a type, a share says little (a small test build)
MAX_SHARED_VALUE_SHARE = 0.05  # no replacement value shared by more than this share of one item's twins


def value_noise_realistic(summary: dict, level) -> dg.AssetCheckResult:
    """Value noise comes from several real error mechanisms, and no replacement value recurs enough to memorise."""
    problems = []
    for noise_type, by in summary["mechanisms"].items():
        total = sum(by.values())
        top, n = max(by.items(), key=lambda kv: kv[1]) if by else ("-", 0)
        if total >= MIN_TWINS_FOR_SHARES and n / total > MAX_MECHANISM_SHARE:
            problems.append(f"{noise_type}: mechanism {top} is {n / total:.0%} of its twins (at most "
                            f"{MAX_MECHANISM_SHARE:.0%})")
    sharing = summary["replacement_sharing"]
    if sharing["worst_share"] > MAX_SHARED_VALUE_SHARE:
        problems.append(f"one replacement value is {sharing['worst_share']:.0%} of item {sharing['worst_item']}'s "
                        f"{sharing['worst_item_twins']} twins (at most {MAX_SHARED_VALUE_SHARE:.0%})")
    metadata = {"problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none"),
                "worst_shared_value_share": dg.MetadataValue.text(f"{sharing['worst_share']:.1%}")}
    applies = NoiseLevel(level) is NoiseLevel.VALUE
    if problems:
        metadata[EVIDENCE] = "; ".join(problems)
    return dg.AssetCheckResult(check_name=NoiseCheck.VALUE_NOISE_REALISTIC, passed=not problems or not applies,
                               metadata=metadata)

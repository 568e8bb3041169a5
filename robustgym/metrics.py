"""Metrics over trajectories, one function per measure; ``summarize`` gathers them for the report.

- **Success** (``rate``, ``clean_noise``): mean reward over episodes, on clean and on noisy tasks,
  and the gap clean - noise. For a noise type or level the clean side is the clean tasks its twins
  derive from, so the gap is paired.
- **Pair success** (``pair_success``): a clean task and one of its twins both solved *in the same
  trial*; the unit is a (clean task, twin, trial). This is what a Clean-Noise benchmark exists to
  measure: an agent that never notices noise, and one that distrusts every record, both score low.
- **pass^k / pass@k** (``pass_k_table``): unbiased from n trials with c successes per task (or
  pair): pass^k = mean of C(c,k)/C(n,k), pass@k = mean of 1 - C(n-c,k)/C(n,k), for k = 1..n with n
  the smallest number of trials of any task.
- **Reliability** (``reliability``): each episode scores +1 when correct; -penalty when it committed
  to an answer that is not accepted, and also -penalty when the task is *clean* and the agent did not
  answer it (abstained with any status other than ``answered``, or never submitted): refusing a
  question the record answers is as wrong as answering one it does not. An abstention on a noisy
  task with a status that is not accepted scores 0 (it noticed something, misnamed it). The score is
  the mean of the clean side and the noisy side, so the noise mix of a release cannot tilt it: with
  penalty >= 1 an agent that never answers scores at most (1 - penalty) / 2 <= 0.
- **Confidence intervals** (``PatientBootstrap``): 95% percentile intervals from a cluster bootstrap
  that resamples patients (a population-level task and its twins form a cluster of their own), since
  the tasks of one patient are correlated. Deterministic for a seed.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from math import comb

import numpy as np

from pipeline.vocabulary import Variant
from robustgym.trajectory import Trajectory
from robustgym.verifier import Outcome

RESAMPLES = 1000
CONFIDENCE = 0.95
_DIGITS = 6


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that k trials drawn without replacement from n (c successful) all succeed."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials drawn from n (c successful) succeeds."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def _round(x: float | None) -> float | None:
    return None if x is None or x != x else round(float(x), _DIGITS)


def solved(t: Trajectory) -> bool:
    return t.reward >= 1.0


def cluster_of(t: Trajectory) -> str:
    """The bootstrap's resampling unit: the patient, or for population-level tasks the clean task
    (a clean task and its twins stay together)."""
    if t.subject_id is not None:
        return f"patient:{t.subject_id}"
    return f"task:{t.clean_task_id or t.task_id}"


# ---------------------------------------------------------------------------- confidence intervals


class PatientBootstrap:
    """Cluster bootstrap over patients: ``resamples`` draws of the clusters with replacement.

    A draw is a weight per cluster (how often it was drawn); any mean over units (episodes, pairs,
    tasks) is then a ratio of weighted sums, computed for every draw at once.
    """

    def __init__(self, clusters: Iterable[str], *, resamples: int = RESAMPLES, seed: int = 0,
                 confidence: float = CONFIDENCE):
        keys = sorted(set(clusters))  # sorted: the draws do not depend on the order trajectories come in
        self.index = {k: i for i, k in enumerate(keys)}
        self.resamples, self.seed, self.confidence = resamples, seed, confidence
        n = len(keys)
        rng = np.random.default_rng(seed)
        self.weights = (rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(float) if n and resamples
                        else np.zeros((0, n)))

    @property
    def clusters(self) -> int:
        return len(self.index)

    def means(self, values: Sequence[float], clusters: Sequence[str]) -> np.ndarray:
        """The mean of ``values`` in every resample (NaN where a resample drew none of their clusters)."""
        n = len(self.index)
        idx = np.fromiter((self.index[c] for c in clusters), dtype=np.int64, count=len(clusters))
        sums = np.bincount(idx, weights=np.asarray(values, dtype=float), minlength=n)
        counts = np.bincount(idx, minlength=n).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (self.weights @ sums) / (self.weights @ counts)

    def interval(self, replicates: np.ndarray) -> list[float] | None:
        finite = replicates[np.isfinite(replicates)]
        if finite.size == 0:
            return None
        tail = (1 - self.confidence) / 2 * 100
        lo, hi = np.percentile(finite, [tail, 100 - tail])
        return [_round(lo), _round(hi)]

    def describe(self) -> dict:
        return {"unit": "patient", "clusters": self.clusters, "resamples": self.resamples, "seed": self.seed,
                "confidence": self.confidence, "method": "percentile"}


@dataclass(frozen=True)
class _Units:
    """Values with the cluster each belongs to: what a mean and its interval are computed from."""

    values: tuple[float, ...]
    clusters: tuple[str, ...]

    @classmethod
    def of(cls, items: Iterable[tuple[float, str]]) -> "_Units":
        items = list(items)
        return cls(tuple(v for v, _ in items), tuple(c for _, c in items))

    def mean(self) -> float | None:
        return sum(self.values) / len(self.values) if self.values else None

    def replicates(self, boot: PatientBootstrap | None) -> np.ndarray | None:
        if boot is None or not self.values:
            return None
        return boot.means(self.values, self.clusters)


def _interval(boot: PatientBootstrap | None, replicates: np.ndarray | None) -> list[float] | None:
    return boot.interval(replicates) if boot is not None and replicates is not None else None


# ---------------------------------------------------------------------------- success and gap


def rate(trajectories: Sequence[Trajectory], boot: PatientBootstrap | None = None) -> dict:
    """Mean reward over the episodes, with its interval."""
    units = _Units.of((t.reward, cluster_of(t)) for t in trajectories)
    return {"episodes": len(units.values), "success": _round(units.mean()),
            "ci": _interval(boot, units.replicates(boot))}


def _gap(clean: Sequence[Trajectory], noise: Sequence[Trajectory], boot: PatientBootstrap | None) -> dict:
    out = {"clean": rate(clean, boot), "noise": rate(noise, boot)}
    c, n = out["clean"]["success"], out["noise"]["success"]
    out["gap"] = _round(c - n) if c is not None and n is not None else None
    out["gap_ci"] = None
    if boot is not None and clean and noise:
        rc = _Units.of((t.reward, cluster_of(t)) for t in clean).replicates(boot)
        rn = _Units.of((t.reward, cluster_of(t)) for t in noise).replicates(boot)
        out["gap_ci"] = boot.interval(rc - rn)
    return out


def clean_noise(trajectories: Sequence[Trajectory], boot: PatientBootstrap | None = None) -> dict:
    """Success on the clean and on the noisy episodes, and the gap clean - noise."""
    return _gap([t for t in trajectories if t.variant == Variant.CLEAN],
                [t for t in trajectories if t.variant == Variant.NOISE], boot)


def paired_clean_noise(twins: Sequence[Trajectory], clean_by_id: dict[str, list[Trajectory]],
                       boot: PatientBootstrap | None = None) -> dict:
    """Like ``clean_noise`` for a group of twins, whose clean side is the clean tasks they derive from."""
    originals = sorted({t.clean_task_id for t in twins if t.clean_task_id})
    return _gap([c for cid in originals for c in clean_by_id.get(cid, [])], list(twins), boot)


# ---------------------------------------------------------------------------- pairs


@dataclass(frozen=True)
class PairTrial:
    """A clean task and one of its twins in the same trial; solved when both episodes were."""

    clean: Trajectory
    twin: Trajectory

    @property
    def solved(self) -> bool:
        return solved(self.clean) and solved(self.twin)

    @property
    def key(self) -> tuple[str, str]:
        return self.clean.task_id, self.twin.task_id


def pair_trials(trajectories: Sequence[Trajectory]) -> list[PairTrial]:
    """Every (clean task, twin, trial) for which both episodes were played."""
    clean = {(t.task_id, t.trial): t for t in trajectories if t.variant == Variant.CLEAN}
    out = []
    for t in trajectories:
        if t.variant == Variant.NOISE and t.clean_task_id and (t.clean_task_id, t.trial) in clean:
            out.append(PairTrial(clean[(t.clean_task_id, t.trial)], t))
    return out


def pair_success(pairs: Sequence[PairTrial], boot: PatientBootstrap | None = None) -> dict:
    """Share of (clean task, twin, trial) in which the clean task and the twin were both solved."""
    units = _Units.of((1.0 if p.solved else 0.0, cluster_of(p.twin)) for p in pairs)
    return {"pairs": len({p.key for p in pairs}), "episodes": len(units.values), "success": _round(units.mean()),
            "ci": _interval(boot, units.replicates(boot))}


# ---------------------------------------------------------------------------- pass^k


def pass_k_table(trajectories: Sequence[Trajectory], boot: PatientBootstrap | None = None) -> dict:
    """pass^k and pass@k for k = 1..n over the tasks in ``trajectories`` (n: the fewest trials of a task)."""
    per_task: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        per_task[t.task_id].append(t)
    return _pass_k({k: ([solved(t) for t in sorted(v, key=lambda t: t.trial)], cluster_of(v[0]))
                    for k, v in per_task.items()}, boot)


def pair_pass_k_table(pairs: Sequence[PairTrial], boot: PatientBootstrap | None = None) -> dict:
    """pass^k and pass@k where a trial of a pair succeeds when both of its episodes did."""
    per_pair: dict[tuple[str, str], list[PairTrial]] = defaultdict(list)
    for p in pairs:
        per_pair[p.key].append(p)
    return _pass_k({k: ([p.solved for p in sorted(v, key=lambda p: p.twin.trial)], cluster_of(v[0].twin))
                    for k, v in per_pair.items()}, boot)


def _pass_k(outcomes: dict, boot: PatientBootstrap | None) -> dict:
    if not outcomes:
        return {"trials": 0, "tasks": 0, "pass_hat_k": {}, "pass_at_k": {}, "pass_hat_k_ci": {}, "pass_at_k_ci": {}}
    n = min(len(o) for o, _ in outcomes.values())
    counts = [(sum(o[:n]), cluster) for o, cluster in outcomes.values()]
    out = {"trials": n, "tasks": len(counts)}
    for name, estimator in (("pass_hat_k", pass_hat_k), ("pass_at_k", pass_at_k)):
        values, intervals = {}, {}
        for k in range(1, n + 1):
            units = _Units.of((estimator(n, c, k), cluster) for c, cluster in counts)
            values[str(k)] = _round(units.mean())
            intervals[str(k)] = _interval(boot, units.replicates(boot))
        out[name], out[f"{name}_ci"] = values, intervals
    return out


# ---------------------------------------------------------------------------- reliability


def episode_score(t: Trajectory, wrong_penalty: float = 1.0) -> float:
    """+1 correct; -penalty for a wrong answer, or for not answering a clean task; 0 otherwise."""
    if t.outcome == Outcome.CORRECT:
        return 1.0
    if t.outcome == Outcome.WRONG:
        return -wrong_penalty
    if t.variant == Variant.CLEAN and t.outcome in (Outcome.ABSTAINED, Outcome.NO_SUBMISSION):
        return -wrong_penalty
    return 0.0  # a noisy task abstained on with another status, or no submission; or an ungradable task


def reliability(trajectories: Sequence[Trajectory], wrong_penalty: float = 1.0,
                boot: PatientBootstrap | None = None) -> dict:
    """Mean of the clean side's and the noisy side's episode scores (``episode_score``)."""
    counts: dict[str, dict[str, int]] = {side: {o.value: 0 for o in Outcome} for side in ("clean", "noise")}
    sides: dict[str, list[Trajectory]] = {"clean": [], "noise": []}
    for t in trajectories:
        side = "clean" if t.variant == Variant.CLEAN else "noise"
        counts[side][t.outcome] += 1
        sides[side].append(t)
    units = {s: _Units.of((episode_score(t, wrong_penalty), cluster_of(t)) for t in v) for s, v in sides.items()}
    means = {s: u.mean() for s, u in units.items()}
    present = [m for m in means.values() if m is not None]
    score = sum(present) / len(present) if present else None
    ci = None
    if boot is not None and present:
        reps = [u.replicates(boot) for u in units.values() if u.values]
        ci = boot.interval(sum(reps) / len(reps))
    total = {o.value: counts["clean"][o.value] + counts["noise"][o.value] for o in Outcome}
    return {"score": _round(score), "ci": ci, "clean": _round(means["clean"]), "noise": _round(means["noise"]),
            "wrong_penalty": wrong_penalty, "outcomes": total, "outcomes_clean": counts["clean"],
            "outcomes_noise": counts["noise"]}


# ---------------------------------------------------------------------------- the whole summary


def _grouped(items: Iterable, key: Callable) -> dict[str, list]:
    out: dict[str, list] = defaultdict(list)
    for item in items:
        out[key(item)].append(item)
    return dict(sorted(out.items()))


def summarize(trajectories: Sequence[Trajectory], *, wrong_penalty: float = 1.0, resamples: int = RESAMPLES,
              seed: int = 0) -> dict:
    """Every number of the report, computed from the trajectories alone (intervals: ``PatientBootstrap``)."""
    trajectories = list(trajectories)
    boot = PatientBootstrap((cluster_of(t) for t in trajectories), resamples=resamples, seed=seed) \
        if resamples > 0 and trajectories else None
    twins = [t for t in trajectories if t.variant == Variant.NOISE]
    clean_by_id: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        if t.variant == Variant.CLEAN:
            clean_by_id[t.task_id].append(t)
    pairs = pair_trials(trajectories)

    def by(key: str, rows: dict) -> dict:
        pair_groups = _grouped(pairs, lambda p: getattr(p.twin, key) or "?")
        for name, group in rows.items():
            group["pairs"] = pair_success(pair_groups.get(name, []), boot)
        return rows

    return {
        "episodes": len(trajectories),
        "tasks": len({t.task_id for t in trajectories}),
        "overall": {"all": rate(trajectories, boot), **clean_noise(trajectories, boot),
                    "pairs": pair_success(pairs, boot)},
        "by_intent": by("intent", {k: clean_noise(v, boot) for k, v in
                                   _grouped(trajectories, lambda t: t.intent).items()}),
        "by_level": by("level", {k: clean_noise(v, boot) for k, v in
                                 _grouped(trajectories, lambda t: t.level).items()}),
        "by_noise_level": by("noise_level", {k: paired_clean_noise(v, clean_by_id, boot) for k, v in
                                             _grouped(twins, lambda t: t.noise_level or "?").items()}),
        "by_noise_type": by("noise_type", {k: paired_clean_noise(v, clean_by_id, boot) for k, v in
                                           _grouped(twins, lambda t: t.noise_type or "?").items()}),
        "pass_k": {"all": pass_k_table(trajectories, boot),
                   "clean": pass_k_table([t for t in trajectories if t.variant == Variant.CLEAN], boot),
                   "noise": pass_k_table(twins, boot),
                   "pairs": pair_pass_k_table(pairs, boot)},
        "reliability": reliability(trajectories, wrong_penalty, boot),
        "bootstrap": boot.describe() if boot else None,
    }

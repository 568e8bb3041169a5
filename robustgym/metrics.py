"""Metrics over trajectories: success on clean and noisy tasks, pass^k and pass@k, reliability.

- **Success rate**: mean reward over episodes, for clean and noisy tasks and the gap between them,
  overall and per intent, level, noise level and noise type. For a noise type, the clean success
  is measured on the clean tasks its twins derive from, so the gap is paired.
- **pass^k** (all k trials succeed) and **pass@k** (at least one does), unbiased from n trials with
  c successes per task: pass^k = mean over tasks of C(c,k)/C(n,k); pass@k = mean of
  1 - C(n-c,k)/C(n,k); for k = 1..n (n = the smallest number of trials of any task).
- **Reliability**: (correct - penalty x wrong) / episodes, where *wrong* is an episode that
  committed to an answer (status ``answered``) that was not accepted, and abstentions (a
  non-answered status that was not accepted) and missing submissions score 0. With penalty 1 it
  ranges from -1 (always confidently wrong) to 1, and an agent gains by abstaining when unsure.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from math import comb

from pipeline.vocabulary import Variant
from robustgym.trajectory import Trajectory
from robustgym.verifier import Outcome


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


def _rate(rewards: Sequence[float]) -> dict:
    return {"episodes": len(rewards), "success": round(sum(rewards) / len(rewards), 6) if rewards else None}


def _split_rates(items: Iterable[Trajectory]) -> dict:
    items = list(items)
    return _with_gap({"clean": _rate([t.reward for t in items if t.variant == Variant.CLEAN]),
                      "noise": _rate([t.reward for t in items if t.variant == Variant.NOISE])})


def _with_gap(out: dict) -> dict:
    c, n = out["clean"]["success"], out["noise"]["success"]
    out["gap"] = round(c - n, 6) if c is not None and n is not None else None
    return out


def pass_k_table(trajectories: Sequence[Trajectory]) -> dict:
    """pass^k and pass@k for k = 1..n, over the tasks in ``trajectories``."""
    per_task: dict[str, list[float]] = defaultdict(list)
    for t in trajectories:
        per_task[t.task_id].append(t.reward)
    if not per_task:
        return {"trials": 0, "tasks": 0, "pass_hat_k": {}, "pass_at_k": {}}
    n = min(len(r) for r in per_task.values())
    counts = [(n, sum(1 for r in rewards[:n] if r >= 1.0)) for rewards in per_task.values()]
    return {
        "trials": n, "tasks": len(per_task),
        "pass_hat_k": {str(k): round(sum(pass_hat_k(n, c, k) for n, c in counts) / len(counts), 6)
                       for k in range(1, n + 1)},
        "pass_at_k": {str(k): round(sum(pass_at_k(n, c, k) for n, c in counts) / len(counts), 6)
                      for k in range(1, n + 1)},
    }


def reliability(trajectories: Sequence[Trajectory], wrong_penalty: float = 1.0) -> dict:
    counts = {o.value: 0 for o in Outcome}
    for t in trajectories:
        counts[t.outcome] += 1
    episodes = len(trajectories)
    score = (counts[Outcome.CORRECT] - wrong_penalty * counts[Outcome.WRONG]) / episodes if episodes else None
    return {"score": round(score, 6) if score is not None else None, "wrong_penalty": wrong_penalty,
            "outcomes": counts}


def summarize(trajectories: Sequence[Trajectory], *, wrong_penalty: float = 1.0) -> dict:
    """Every number of the report, computed from the trajectories alone."""
    trajectories = list(trajectories)
    by: dict[str, dict[str, list[Trajectory]]] = {k: defaultdict(list) for k in ("intent", "level")}
    for t in trajectories:
        by["intent"][t.intent].append(t)
        by["level"][t.level].append(t)
    noise_by: dict[str, dict[str, list[Trajectory]]] = {"noise_level": defaultdict(list), "noise_type": defaultdict(list)}
    for t in trajectories:
        if t.variant == Variant.NOISE:
            noise_by["noise_level"][t.noise_level or "?"].append(t)
            noise_by["noise_type"][t.noise_type or "?"].append(t)
    clean_by_id: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajectories:
        if t.variant == Variant.CLEAN:
            clean_by_id[t.task_id].append(t)

    def paired(twins: list[Trajectory]) -> dict:
        originals = {t.clean_task_id for t in twins if t.clean_task_id}
        clean = [c.reward for cid in sorted(originals) for c in clean_by_id.get(cid, [])]
        return _with_gap({"clean": _rate(clean), "noise": _rate([t.reward for t in twins])})

    return {
        "episodes": len(trajectories),
        "tasks": len({t.task_id for t in trajectories}),
        "overall": {"all": _rate([t.reward for t in trajectories]), **_split_rates(trajectories)},
        "by_intent": {k: _split_rates(v) for k, v in sorted(by["intent"].items())},
        "by_level": {k: _split_rates(v) for k, v in sorted(by["level"].items())},
        "by_noise_level": {k: paired(v) for k, v in sorted(noise_by["noise_level"].items())},
        "by_noise_type": {k: paired(v) for k, v in sorted(noise_by["noise_type"].items())},
        "pass_k": {"all": pass_k_table(trajectories),
                   "clean": pass_k_table([t for t in trajectories if t.variant == Variant.CLEAN]),
                   "noise": pass_k_table([t for t in trajectories if t.variant == Variant.NOISE])},
        "reliability": reliability(trajectories, wrong_penalty),
    }

"""pass^k and pass@k match hand-computed values; the report's rates and reliability follow the
definitions in robustgym/metrics.py."""

import pytest

from robustgym.metrics import pass_at_k, pass_hat_k, pass_k_table, reliability, summarize
from robustgym.trajectory import Trajectory

def traj(task_id: str, reward: float, *, variant="clean", outcome=None, intent="laboratory", noise_type=None,
         clean_task_id=None, trial=0) -> Trajectory:
    return Trajectory(
        episode_id=f"a/{task_id}/{trial}", release="r", task_id=task_id, split="test", variant=variant, intent=intent,
        level="patient", noise_level="record" if noise_type else None, noise_type=noise_type,
        clean_task_id=clean_task_id, agent="a", trial=trial, system="s", question="q", answer_type="number",
        unit=None, steps=(), submission=None, reward=reward, passed=reward >= 1,
        outcome=outcome or ("correct" if reward >= 1 else "wrong"), expected_status="answered", verdict=None,
        error=None, reset_ms=0.0, total_ms=0.0)

def test_pass_hat_k_and_pass_at_k_by_hand():
    # n=5 trials, c=3 successes
    assert pass_hat_k(5, 3, 1) == pytest.approx(3 / 5)
    assert pass_hat_k(5, 3, 2) == pytest.approx(3 / 10)  # C(3,2)/C(5,2)
    assert pass_hat_k(5, 3, 3) == pytest.approx(1 / 10)  # C(3,3)/C(5,3)
    assert pass_hat_k(5, 3, 4) == 0.0
    assert pass_at_k(5, 3, 1) == pytest.approx(3 / 5)
    assert pass_at_k(5, 3, 2) == pytest.approx(1 - 1 / 10)  # 1 - C(2,2)/C(5,2)
    assert pass_at_k(5, 3, 3) == 1.0
    with pytest.raises(ValueError):
        pass_hat_k(3, 4, 1)

def test_pass_k_table_averages_the_unbiased_estimator_over_tasks():
    # task A: 4 trials, 4 successes; task B: 4 trials, 2 successes; task C: 4 trials, 0 successes
    rewards = {"A": [1, 1, 1, 1], "B": [1, 0, 1, 0], "C": [0, 0, 0, 0]}
    trajectories = [traj(t, r, trial=i) for t, rs in rewards.items() for i, r in enumerate(rs)]
    table = pass_k_table(trajectories)
    assert table["trials"] == 4 and table["tasks"] == 3
    # pass^k: A: 1; B: C(2,k)/C(4,k) = 1/2, 1/6, 0, 0; C: 0
    assert table["pass_hat_k"] == {"1": pytest.approx((1 + 0.5) / 3), "2": pytest.approx((1 + 1 / 6) / 3),
                                   "3": pytest.approx(1 / 3), "4": pytest.approx(1 / 3)}
    # pass@k: A: 1; B: 1 - C(2,k)/C(4,k) = 1/2, 5/6, 1, 1; C: 0
    assert table["pass_at_k"] == {"1": pytest.approx(1.5 / 3), "2": pytest.approx((1 + 5 / 6) / 3, abs=1e-6),
                                  "3": pytest.approx(2 / 3), "4": pytest.approx(2 / 3)}

def test_pass_k_uses_the_smallest_number_of_trials_of_any_task():
    trajectories = [traj("A", 1, trial=i) for i in range(3)] + [traj("B", 0, trial=i) for i in range(2)]
    assert pass_k_table(trajectories)["trials"] == 2

def test_reliability_penalises_wrong_answers_more_than_abstentions():
    correct = [traj("A", 1)]
    abstaining = correct + [traj("B", 0, outcome="abstained")]
    wrong = correct + [traj("B", 0, outcome="wrong")]
    assert reliability(abstaining)["score"] == 0.5
    assert reliability(wrong)["score"] == 0.0
    assert reliability(wrong, wrong_penalty=2)["score"] == -0.5
    assert reliability(abstaining)["outcomes"]["abstained"] == 1

def test_summary_gives_clean_noise_gap_and_paired_rates_per_noise_type():
    trajectories = [traj("c1", 1), traj("c2", 1), traj("c3", 0),
                    traj("n1", 0, variant="noise", noise_type="missing_evidence", clean_task_id="c1"),
                    traj("n2", 1, variant="noise", noise_type="implausible_value", clean_task_id="c3",
                         intent="vitals_io")]
    summary = summarize(trajectories)
    assert summary["overall"]["clean"] == {"episodes": 3, "success": pytest.approx(2 / 3, abs=1e-6)}
    assert summary["overall"]["noise"] == {"episodes": 2, "success": 0.5}
    assert summary["overall"]["gap"] == pytest.approx(2 / 3 - 0.5, abs=1e-6)
    assert summary["by_noise_type"]["missing_evidence"]["clean"]["success"] == 1.0
    assert summary["by_noise_type"]["implausible_value"]["clean"]["success"] == 0.0
    assert summary["by_intent"]["vitals_io"]["clean"]["episodes"] == 0
    assert summary["by_noise_level"]["record"]["noise"]["episodes"] == 2

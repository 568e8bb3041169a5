"""Each metric pinned on small hand-made trajectories: pass^k / pass@k (unbiased estimator), success
and the paired gap, pair success in the same trial, reliability (abstaining on a clean task costs as
a wrong answer does), and the patient bootstrap's intervals."""

import pytest

from robustgym.metrics import (PatientBootstrap, episode_score, pair_pass_k_table, pair_success, pair_trials,
                               pass_at_k, pass_hat_k, pass_k_table, reliability, summarize)
from robustgym.trajectory import Trajectory


def traj(task_id: str, reward: float, *, variant="clean", outcome=None, intent="laboratory", noise_type=None,
         clean_task_id=None, trial=0, subject_id=1) -> Trajectory:
    return Trajectory(
        episode_id=f"a/{task_id}/{trial}", release="r", task_id=task_id, split="test", variant=variant, intent=intent,
        level="patient", noise_level="record" if noise_type else None, noise_type=noise_type,
        clean_task_id=clean_task_id, agent="a", trial=trial, system="s", question="q", answer_type="number",
        unit=None, steps=(), submission=None, reward=reward, passed=reward >= 1,
        outcome=outcome or ("correct" if reward >= 1 else "wrong"), expected_status="answered", verdict=None,
        error=None, reset_ms=0.0, total_ms=0.0, subject_id=subject_id)


def twin(task_id: str, reward: float, clean: str, noise_type="missing_evidence", **kw) -> Trajectory:
    return traj(task_id, reward, variant="noise", noise_type=noise_type, clean_task_id=clean, **kw)


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
    assert table["pass_hat_k_ci"] == {"1": None, "2": None, "3": None, "4": None}  # no bootstrap asked for


def test_pass_k_uses_the_smallest_number_of_trials_of_any_task():
    trajectories = [traj("A", 1, trial=i) for i in range(3)] + [traj("B", 0, trial=i) for i in range(2)]
    assert pass_k_table(trajectories)["trials"] == 2


def test_a_pair_succeeds_only_when_clean_task_and_twin_are_both_right_in_the_same_trial():
    trajectories = [traj("c1", 1, trial=0), traj("c1", 0, trial=1),
                    twin("n1", 0, "c1", trial=0), twin("n1", 1, "c1", trial=1),  # each right once, never together
                    twin("n2", 1, "c1", trial=0, noise_type="unit_mismatch"),
                    twin("n2", 0, "c1", trial=1, noise_type="unit_mismatch")]
    pairs = pair_trials(trajectories)
    assert len(pairs) == 4
    assert pair_success(pairs) == {"pairs": 2, "episodes": 4, "success": 0.25, "ci": None}
    assert pair_success([p for p in pairs if p.twin.task_id == "n1"])["success"] == 0.0
    # pass^k of pairs: (c1, n1) 0 of 2 trials, (c1, n2) 1 of 2 -> pass^1 = (0 + 1/2) / 2, pass^2 = 0
    table = pair_pass_k_table(pairs)
    assert table["pass_hat_k"] == {"1": 0.25, "2": 0.0} and table["pass_at_k"] == {"1": 0.25, "2": 0.5}
    summary = summarize(trajectories, resamples=0)
    assert summary["by_noise_type"]["missing_evidence"]["pairs"]["success"] == 0.0
    assert summary["by_noise_type"]["unit_mismatch"]["pairs"]["success"] == 0.5
    assert summary["by_intent"]["laboratory"]["pairs"]["success"] == 0.25


def test_a_twin_whose_clean_task_was_not_played_forms_no_pair():
    assert pair_trials([twin("n1", 1, "c1"), traj("c2", 1)]) == []
    assert pair_trials([twin("n1", 1, "c1", trial=1), traj("c1", 1, trial=0)]) == []  # other trial


def test_reliability_charges_abstaining_on_a_clean_task_like_a_wrong_answer():
    assert episode_score(traj("c", 0, outcome="abstained")) == episode_score(traj("c", 0, outcome="wrong")) == -1
    assert episode_score(traj("c", 0, outcome="no_submission")) == -1
    assert episode_score(twin("n", 0, "c", outcome="abstained")) == 0  # noticed noise, misnamed it
    assert episode_score(twin("n", 0, "c", outcome="wrong")) == -1
    assert episode_score(twin("n", 0, "c", outcome="wrong"), wrong_penalty=2) == -2
    clean = [traj("c1", 1), traj("c2", 1), traj("c3", 1), traj("c4", 0, outcome="abstained")]
    noise = [twin("n1", 1, "c1"), twin("n2", 0, "c2", outcome="abstained"), twin("n3", 0, "c3", outcome="wrong"),
             twin("n4", 0, "c4", outcome="no_submission")]
    r = reliability(clean + noise)
    # clean side (1 + 1 + 1 - 1) / 4 = 0.5; noisy side (1 + 0 - 1 + 0) / 4 = 0; score = their mean
    assert (r["clean"], r["noise"], r["score"]) == (0.5, 0.0, 0.25)
    assert r["outcomes_clean"]["abstained"] == 1 and r["outcomes_noise"]["no_submission"] == 1
    r2 = reliability(clean + noise, wrong_penalty=2)
    assert (r2["clean"], r2["noise"], r2["score"]) == (0.25, -0.25, 0.0)


def test_an_agent_that_never_answers_cannot_score_above_zero_however_many_twins_it_gets_right():
    clean = [traj(f"c{i}", 0, outcome="abstained") for i in range(2)]
    twins = [twin(f"n{i}", 1, f"c{i % 2}") for i in range(50)]  # 25 twins per clean task, all right
    assert reliability(clean + twins)["score"] == 0.0  # (-1 + 1) / 2: the mix of the release does not matter
    assert reliability(clean + twins[:1])["score"] == 0.0


def test_success_gap_and_paired_clean_side_per_noise_type():
    trajectories = [traj("c1", 1), traj("c2", 1), traj("c3", 0),
                    twin("n1", 0, "c1"), twin("n2", 1, "c3", noise_type="implausible_value", intent="vitals_io")]
    summary = summarize(trajectories, resamples=0)
    assert summary["overall"]["clean"] == {"episodes": 3, "success": pytest.approx(2 / 3, abs=1e-6), "ci": None}
    assert summary["overall"]["noise"] == {"episodes": 2, "success": 0.5, "ci": None}
    assert summary["overall"]["gap"] == pytest.approx(2 / 3 - 0.5, abs=1e-6)
    assert summary["by_noise_type"]["missing_evidence"]["clean"]["success"] == 1.0  # c1 only
    assert summary["by_noise_type"]["implausible_value"]["clean"]["success"] == 0.0  # c3 only
    assert summary["by_intent"]["vitals_io"]["clean"]["episodes"] == 0
    assert summary["by_noise_level"]["record"]["noise"]["episodes"] == 2
    assert summary["bootstrap"] is None


def test_intervals_resample_patients_not_episodes():
    one_patient = [traj(f"c{i}", i % 2, subject_id=7) for i in range(100)]
    many_patients = [traj(f"c{i}", i % 2, subject_id=i) for i in range(100)]
    assert summarize(one_patient)["overall"]["clean"]["ci"] == [0.5, 0.5]  # one cluster: nothing to resample
    lo, hi = summarize(many_patients)["overall"]["clean"]["ci"]
    assert 0.35 < lo < 0.5 < hi < 0.65


def test_a_population_task_and_its_twins_are_resampled_together():
    boot_input = [traj("pop", 1, subject_id=None), twin("pop~x", 0, "pop", subject_id=None)]
    summary = summarize(boot_input)
    assert summary["bootstrap"]["clusters"] == 1
    assert summary["overall"]["gap_ci"] == [1.0, 1.0]


def test_the_bootstrap_is_deterministic_for_a_seed_and_ignores_input_order():
    trajectories = [traj(f"c{i}", i % 3 == 0, subject_id=i % 7) for i in range(40)] + \
                   [twin(f"n{i}", i % 2, f"c{i}", subject_id=i % 7) for i in range(40)]
    a = summarize(trajectories, seed=3)
    assert summarize(list(reversed(trajectories)), seed=3) == a
    keys = [f"patient:{i}" for i in range(7)]
    assert (PatientBootstrap(keys, seed=3).weights == PatientBootstrap(reversed(keys), seed=3).weights).all()
    assert (PatientBootstrap(keys, seed=3).weights != PatientBootstrap(keys, seed=4).weights).any()
    lo, hi = a["reliability"]["ci"]
    assert lo <= a["reliability"]["score"] <= hi
    assert a["bootstrap"] == {"unit": "patient", "clusters": 7, "resamples": 1000, "seed": 3, "confidence": 0.95,
                              "method": "percentile"}


def test_a_two_patient_bootstrap_spans_every_resample():
    boot = PatientBootstrap(["patient:1", "patient:2"], resamples=2000, seed=0)
    replicates = boot.means([1.0, 0.0], ["patient:1", "patient:2"])
    assert set(replicates.round(6)) == {0.0, 0.5, 1.0}
    assert boot.interval(replicates) == [0.0, 1.0]

"""The reference agents on a release the pipeline built from the demo: the oracle scores 100% on
every split, the naive agent near 100% on clean tasks and markedly lower on noisy ones, the checking
agent closes part of that gap. The registry refuses duplicates, and an agent that fails does not
stop a run."""

import pytest

from pipeline.vocabulary import Split
from robustgym.agents import DuplicateAgentError, Plan, Privilege, agent_names, hint_for, make_agent, register_agent
from robustgym.metrics import summarize
from robustgym.runner import run_agent


@pytest.fixture(scope="module")
def scores(pipeline_release):
    out = {}
    for name in ("oracle", "naive", "checking"):
        out[name] = {s.value: summarize(run_agent(pipeline_release, make_agent(name), split=s)) for s in Split}
    return out


@pytest.mark.parametrize("split", [s.value for s in Split])
def test_the_oracle_scores_100_percent_on_every_split(scores, split):
    overall = scores["oracle"][split]["overall"]
    assert overall["all"]["success"] == 1.0 and overall["all"]["episodes"] > 0
    assert overall["noise"]["episodes"] > 0


@pytest.mark.parametrize("split", [s.value for s in Split])
def test_the_naive_agent_solves_clean_tasks_and_fails_noisy_ones(scores, split):
    overall = scores["naive"][split]["overall"]
    assert overall["clean"]["success"] >= 0.9
    assert overall["noise"]["success"] <= overall["clean"]["success"] - 0.5
    assert scores["naive"][split]["reliability"]["outcomes"]["abstained"] == 0  # it always answers


def test_the_checking_agent_is_more_robust_than_the_naive_one(scores):
    for split in Split:
        checking, naive = scores["checking"][split.value]["overall"], scores["naive"][split.value]["overall"]
        assert checking["noise"]["success"] > naive["noise"]["success"]
        assert checking["clean"]["success"] >= 0.8
        assert scores["checking"][split.value]["reliability"]["score"] > scores["naive"][split.value]["reliability"]["score"]


def test_on_the_hand_made_release_the_checking_agent_catches_every_planted_noise(demo_release):
    summary = summarize(run_agent(demo_release, make_agent("checking")))
    assert summary["overall"]["clean"]["success"] == 1.0
    assert {k: v["noise"]["success"] for k, v in summary["by_noise_type"].items()} == {
        "conflicting_duplicate": 1.0, "implausible_value": 1.0, "missing_evidence": 1.0,
        "nonexistent_entity": 1.0, "unit_mismatch": 1.0}


def test_reference_agents_get_only_the_hint_their_privilege_allows(demo_release):
    task = next(t for t in demo_release.tasks() if t.variant == "noise")
    plan = hint_for(task, Privilege.PLAN)
    assert isinstance(plan, Plan) and plan.gold_sql == task.gold_sql
    assert not hasattr(plan, "accepted_outcomes") and not hasattr(plan, "answer") and not hasattr(plan, "patch")
    assert hint_for(task, Privilege.NONE) is None
    assert hint_for(task, Privilege.ORACLE) is task
    assert make_agent("openai", base_url="http://127.0.0.1:9", model="m").privilege == Privilege.NONE


def test_agents_are_registered_once(monkeypatch):
    assert {"oracle", "naive", "checking", "openai"} <= set(agent_names())
    with pytest.raises(DuplicateAgentError, match="naive"):
        register_agent("naive")(object)
    with pytest.raises(KeyError, match="no agent named 'nobody'"):
        make_agent("nobody")


def test_an_agent_that_raises_or_never_submits_is_recorded_and_the_run_goes_on(demo_release):
    class Flaky:
        name, privilege = "flaky", Privilege.NONE

        def run(self, env, observation, hint, *, seed):
            env.sql("SELECT 1")
            if "gender" in observation.task_id:
                raise RuntimeError("model crashed")

    trajectories = run_agent(demo_release, Flaky(), split="test")
    assert len(trajectories) == len(demo_release.tasks("test"))
    crashed = [t for t in trajectories if "gender" in t.task_id]
    assert crashed and all("RuntimeError: model crashed" in t.error for t in crashed)
    assert all(t.outcome == "no_submission" and t.reward == 0 for t in trajectories)
    assert all(len(t.steps) == 1 for t in trajectories)

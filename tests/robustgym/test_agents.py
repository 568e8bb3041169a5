"""The reference agents on a release the pipeline built from the demo: the oracle scores 100% on
every split, the naive agent near 100% on clean tasks and markedly lower on noisy ones, the checking
agent closes part of that gap, and neither floor (always abstain; copy the clean answer) can pass for
a robust agent. The registry refuses duplicates, and an agent that fails does not stop a run."""

import pytest

from pipeline.vocabulary import Level, NoiseType, Split
from robustgym.agents import (CleanAnswer, DuplicateAgentError, Plan, Privilege, agent_names, hint_for, make_agent,
                              register_agent)
from robustgym.metrics import summarize
from robustgym.runner import run_agent


AGENTS = ("oracle", "naive", "checking", "abstain", "clean_answer")


@pytest.fixture(scope="module")
def runs(pipeline_release):
    return {name: run_agent(pipeline_release, make_agent(name)) for name in AGENTS}


@pytest.fixture(scope="module")
def scores(runs):
    return {name: {s.value: summarize([t for t in trajectories if t.split == s.value], resamples=200)
                   for s in Split} for name, trajectories in runs.items()}


@pytest.fixture(scope="module")
def overall(runs):
    return {name: summarize(trajectories) for name, trajectories in runs.items()}


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


def test_always_abstaining_scores_at_most_zero_reliability(overall, scores):
    assert overall["abstain"]["reliability"]["score"] <= 0
    assert overall["abstain"]["overall"]["noise"]["success"] > 0  # it does get twins right, and still loses
    assert all(scores["abstain"][s.value]["reliability"]["score"] <= 0 for s in Split)
    assert overall["abstain"]["overall"]["pairs"]["success"] == 0


def test_copying_the_clean_answer_scores_below_checking_and_checking_above_naive(overall):
    reliability = {name: overall[name]["reliability"]["score"] for name in AGENTS}
    pairs = {name: overall[name]["overall"]["pairs"]["success"] for name in AGENTS}
    assert overall["clean_answer"]["overall"]["clean"]["success"] == 1.0
    assert reliability["clean_answer"] < reliability["checking"] and pairs["clean_answer"] < pairs["checking"]
    assert reliability["naive"] < reliability["checking"] and pairs["naive"] < pairs["checking"]
    assert reliability["checking"] < reliability["oracle"] == 1.0
    assert max(reliability["abstain"], reliability["clean_answer"]) < reliability["checking"]


def test_the_release_build_scores_the_floors_on_the_test_split_and_the_card_prints_them(pipeline_release, overall):
    floors = pipeline_release.manifest["floors"]
    assert floors["split"] == "test" and floors["tasks"] == len(pipeline_release.tasks("test"))
    assert set(floors["agents"]) == {"abstain", "clean_answer"}
    assert floors["agents"]["abstain"]["reliability"] <= 0
    assert floors["agents"]["clean_answer"]["clean"] == 1.0
    assert floors["bar"]["reliability"] == max(a["reliability"] for a in floors["agents"].values())
    test_only = summarize(run_agent(pipeline_release, make_agent("clean_answer"), split="test"))
    assert floors["agents"]["clean_answer"]["reliability"] == test_only["reliability"]["score"]
    card = (pipeline_release.root / "README.md").read_text()
    assert "## Reference floors" in card and "| `abstain` |" in card and "| `clean_answer` |" in card
    assert f"reliability {floors['bar']['reliability']:+.3f}" in card


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
    clean = demo_release.task(task.clean_task_id)
    copied = hint_for(task, Privilege.CLEAN_ANSWER, clean)
    assert isinstance(copied, CleanAnswer) and copied.answer == clean.answer and not hasattr(copied, "gold_sql")
    with pytest.raises(ValueError, match="needs its clean task"):
        hint_for(task, Privilege.CLEAN_ANSWER)


def test_agents_are_registered_once(monkeypatch):
    assert {"oracle", "naive", "checking", "openai", "abstain", "clean_answer"} <= set(agent_names())
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


def test_the_checking_agent_keeps_its_last_call_for_the_submission(pipeline_release, runs):
    """Under a budget smaller than its checks need, it answers rather than ending without a
    submission; an episode that needed fewer calls than the budget is played exactly as before."""
    from robustgym.env import Limits

    budget = 10
    tight = {t.task_id: t for t in run_agent(pipeline_release, make_agent("checking"),
                                              limits=Limits(max_tool_calls=budget))}
    full = {t.task_id: t for t in runs["checking"]}
    assert all(t.submission is not None and t.error is None and len(t.steps) <= budget for t in tight.values())
    cut = [i for i, t in full.items() if len(t.steps) > budget]
    # The checks stop with the calls the gold SQL (until it has run) and the submission need.
    assert cut and all(len(tight[i].steps) == budget for i in cut)
    assert all(tight[i].submission == t.submission for i, t in full.items() if len(t.steps) <= budget)
    # With the default budget no episode of the release runs out of calls.
    assert not [t.task_id for t in full.values() if t.error]


def test_the_checking_agents_probes_are_statements_the_database_runs(runs):
    """Every probe it builds from a gold SQL is valid SQL, templates whose FROM reads subqueries (a
    first and a last value) included: it aggregates over the tables a FROM clause reads directly,
    never names an alias from inside a subquery, and so spends no call on a statement that fails."""
    from robustgym.agents.checking import _table_refs, top_level_from

    failed = [(t.task_id, str(s.arguments)[:120], s.content[:120])
              for t in runs["checking"] for s in t.steps if s.tool == "sql" and not s.ok]
    assert not failed, failed[:3]
    nested = ("SELECT last_r.valuenum - first_r.valuenum FROM (SELECT l.valuenum FROM labevents AS l "
              "WHERE l.subject_id = 1 ORDER BY l.charttime LIMIT 1) AS first_r, (SELECT l.valuenum FROM "
              "labevents AS l WHERE l.subject_id = 1 ORDER BY l.charttime DESC LIMIT 1) AS last_r")
    assert _table_refs(top_level_from(nested)) == []
    flat = "SELECT max(l.valuenum) FROM labevents AS l JOIN d_labitems AS d ON d.itemid = l.itemid WHERE l.subject_id = 1"
    assert _table_refs(top_level_from(flat)) == [("labevents", "l"), ("d_labitems", "d")]


def test_the_checking_agent_looks_past_a_broken_link_before_it_says_no_evidence(pipeline_release, runs):
    """Reviewer: the checking agent solved 2 of 40 orphaned twins once they stopped accepting the answer
    without the detached rows: it said "no evidence" when the gold SQL found nothing, without a look at
    the patient's rows that had left its scope."""
    tasks = {t.task_id: t for s in Split for t in pipeline_release.tasks(s.value)}
    orphaned = [t for t in runs["checking"] if tasks[t.task_id].noise_type is NoiseType.ORPHANED_RECORD
                and tasks[t.task_id].level is Level.PATIENT]
    assert orphaned, "no patient-level orphaned twin in the release: nothing was checked"
    assert sum(t.reward for t in orphaned) >= 0.75 * len(orphaned), [(t.task_id, t.reward) for t in orphaned]

"""The environment as Gymnasium: text observations and actions, submit terminates with the
verifier's reward, malformed actions are error observations, the step limit truncates."""

import json

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from robustgym.gym_env import ENV_ID, RobustGymEnv


@pytest.fixture()
def gym_env(demo_release):
    env = RobustGymEnv(demo_release, split="test", max_steps=3)
    yield env
    env.close()


def test_it_passes_gymnasiums_environment_checker(gym_env):
    check_env(gym_env, skip_render_check=True)


def test_an_episode_of_text_actions_ends_with_the_verifiers_reward(gym_env, demo_release):
    task = next(t for t in demo_release.tasks("test") if t.noise_type and t.noise_type.value == "implausible_value")
    observation, info = gym_env.reset(options={"task_id": task.task_id})
    assert isinstance(observation, str) and task.question in observation and info["task_id"] == task.task_id
    observation, reward, terminated, truncated, info = gym_env.step(json.dumps(
        {"tool": "sql", "arguments": {"query": task.gold_sql}}))
    assert "45.0" in observation and (reward, terminated, truncated) == (0.0, False, False)
    observation, reward, terminated, truncated, info = gym_env.step(json.dumps(
        {"tool": "submit", "arguments": {"status": "implausible_value"}}))
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["outcome"] == "correct" and info["trajectory"].task_id == task.task_id


def test_malformed_actions_are_observations_and_the_step_limit_truncates(gym_env):
    gym_env.reset(seed=3)
    observation, reward, terminated, truncated, info = gym_env.step("SELECT 1")
    assert observation.startswith("ERROR (bad_arguments): the action is not JSON") and not terminated
    observation, *_ = gym_env.step(json.dumps({"tool": "sql", "arguments": "SELECT 1"}))
    assert "must be a JSON object" in observation
    observation, reward, terminated, truncated, info = gym_env.step(json.dumps({"tool": "sql", "arguments": {"query": "SELECT 1"}}))
    assert truncated and not terminated and reward == 0.0 and info["outcome"] == "no_submission"


def test_it_is_registered_with_gymnasium(demo_release_dir):
    env = gymnasium.make(ENV_ID, release=str(demo_release_dir), split="validation")
    observation, info = env.reset(seed=0)
    assert info["task_id"] and "Answer type" in observation
    env.close()

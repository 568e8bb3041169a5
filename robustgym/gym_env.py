"""The environment as a Gymnasium environment: text observations, text actions.

An action is one JSON object naming a tool and its arguments, e.g.
``{"tool": "sql", "arguments": {"query": "SELECT count(*) FROM patients"}}``; the observation is
the tool's result as text. ``submit`` terminates the episode with the verifier's reward; running
out of steps truncates it with reward 0. An action that is not such an object is answered with an
error observation (through the same conversion as every tool error) and counts as a step.

    env = gymnasium.make("RobustGym-v0", release="releases/latest", split="test")
    obs, info = env.reset(seed=0)                       # a task drawn from the split
    obs, info = env.reset(options={"task_id": "..."})   # or a given task
"""

import json
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium import spaces

from robustgym import tools
from robustgym.env import Env, Limits
from robustgym.release import Release, load_release

ENV_ID = "RobustGym-v0"
MAX_TEXT = 200_000
ACTION_HELP = ('Act by replying with one JSON object: {"tool": "<sql|python|submit>", "arguments": {...}}, '
               'for example {"tool": "sql", "arguments": {"query": "SELECT count(*) FROM patients"}} or '
               '{"tool": "submit", "arguments": {"status": "answered", "answer": 42}}.')


class AnyText(spaces.Text):
    """A text space whose members may hold any character (clinical text is not alphanumeric)."""

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


class RobustGymEnv(gymnasium.Env):
    metadata = {"render_modes": ["ansi"]}

    def __init__(self, release: Release | str | Path, *, split: str | None = None, limits: Limits = Limits(),
                 max_steps: int = 20, render_mode: str | None = None, agent_name: str = "gym",
                 trajectory_path: Path | str | None = None):
        self.release = release if isinstance(release, Release) else load_release(release)
        self.task_ids = [t.task_id for t in self.release.tasks(split)]
        if not self.task_ids:
            raise ValueError(f"release {self.release.version} has no task in split {split!r}")
        self.max_steps = max_steps
        self.render_mode = render_mode
        self.observation_space = AnyText(max_length=MAX_TEXT)
        self.action_space = AnyText(max_length=MAX_TEXT)
        self._env = Env(self.release, limits=limits, agent_name=agent_name, trajectory_path=trajectory_path)
        self._steps = 0
        self._last = ""

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id")
        if task_id is None:
            task_id = self.task_ids[int(self.np_random.integers(len(self.task_ids)))]
        observation = self._env.reset(task_id)
        self._steps = 0
        self._last = f"{observation.system}\n\n{ACTION_HELP}\n\n{observation.prompt}"
        return self._last, {"task_id": task_id, "tools": observation.tools, "answer_type": observation.answer_type}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        self._steps += 1
        tool, arguments, problem = parse_action(action)
        if problem is not None:
            observation = tools.error_observation("action", tools.ToolArgumentError(problem))
        else:
            observation = self._env.call(tool, arguments)
        info: dict[str, Any] = {"ok": observation.ok, "error_kind": observation.error_kind, "tool": tool}
        reward, terminated, truncated = 0.0, False, False
        if self._env.done:
            terminated = True
        elif self._steps >= self.max_steps:
            self._env.abandon(f"step limit ({self.max_steps}) reached")
            truncated = True
        if terminated or truncated:
            result = self._env.result
            reward = result.reward
            info.update(passed=result.passed, outcome=result.outcome.value, trajectory=result.trajectory,
                        verdict=result.verdict.to_dict() if result.verdict else None)
        self._last = observation.content
        return observation.content, reward, terminated, truncated, info

    def render(self) -> str | None:
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        self._env.close()


def parse_action(action: Any) -> tuple[str, dict, str | None]:
    """``(tool, arguments, problem)``: problem is None when the action is well formed."""
    if not isinstance(action, str):
        return "", {}, f"an action is a JSON text, got {type(action).__name__}"
    try:
        data = json.loads(action)
    except json.JSONDecodeError as exc:
        return "", {}, f"the action is not JSON ({exc.msg} at character {exc.pos}). {ACTION_HELP}"
    if not isinstance(data, dict) or not isinstance(data.get("tool"), str):
        return "", {}, f'the action needs a "tool" name. {ACTION_HELP}'
    unknown = set(data) - {"tool", "arguments"}
    if unknown:
        return data["tool"], {}, f"unknown keys in the action: {sorted(unknown)}. {ACTION_HELP}"
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict):
        return data["tool"], {}, '"arguments" must be a JSON object'
    return data["tool"], arguments, None


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point="robustgym.gym_env:RobustGymEnv")

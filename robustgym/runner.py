"""Run an agent over a release split, ``trials`` times per task, and collect the trajectories.

Each episode is reset, handed to the agent with the hint its privilege allows, and ended: an agent
that returns without submitting, or raises, gets a trajectory with no submission (reward 0) and
the error recorded, and the run goes on with the next episode.
"""

from collections.abc import Callable
from pathlib import Path

from pipeline.vocabulary import Split
from robustgym.agents import Agent, hint_for
from robustgym.env import Env, Limits
from robustgym.release import Release
from robustgym.trajectory import Trajectory


def run_agent(release: Release, agent: Agent, *, split: Split | str | None = None, trials: int = 1,
              limits: Limits = Limits(), trajectory_path: Path | None = None, seed: int = 0,
              task_ids: list[str] | None = None,
              progress: Callable[[int, int, Trajectory], None] | None = None) -> list[Trajectory]:
    """Play every task of ``split`` (all splits when None) ``trials`` times; returns the trajectories."""
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    tasks = release.tasks(split)
    if task_ids is not None:
        wanted = set(task_ids)
        tasks = tuple(t for t in tasks if t.task_id in wanted)
    if not tasks:
        raise ValueError(f"release {release.version} has no task in split {split!r}")
    total = len(tasks) * trials
    out: list[Trajectory] = []
    with Env(release, limits=limits, trajectory_path=trajectory_path, agent_name=agent.name) as env:
        for task in tasks:
            for trial in range(trials):
                observation = env.reset(task.task_id, trial=trial)
                try:
                    agent.run(env, observation, hint_for(task, agent.privilege), seed=seed * 1_000_003 + trial)
                except Exception as exc:  # noqa: BLE001 - an agent's failure is recorded, not fatal
                    env.abandon(f"the agent raised {type(exc).__name__}: {exc}")
                if not env.done:
                    env.abandon("the agent returned without submitting")
                out.append(env.result.trajectory)
                if progress:
                    progress(len(out), total, out[-1])
    return out

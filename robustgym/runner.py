"""Run an agent over a release split, ``trials`` times per task, and collect the trajectories.

Each episode is reset, handed to the agent with the hint its privilege allows, and ended: an agent
that returns without submitting, or raises, gets a trajectory with no submission (reward 0) and
the error recorded, and the run goes on with the next episode.

**Concurrency.** With ``concurrency=N`` episodes run in N threads, each with its own ``Env`` worker
over the one read-only base database instance (an episode is a connection of its own). An LLM
agent's episode is mostly waiting for its endpoint, so threads are what it needs; a deterministic
agent gives the same trajectories (outcomes, submissions, steps) in any order of completion, and
the returned list is always in task order, then trial.

**Resuming.** Every finished episode is appended to ``trajectory_path`` at once (a whole line,
flushed). ``recorded`` are the trajectories of an earlier, interrupted run of the same agent on the
same release: their episodes are not played again, and the result holds each episode exactly once.
After an interrupt (Ctrl-C) no further line is written: an episode still running then is dropped,
not recorded half-done, and is played on resume.
"""

import queue
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline.task_model import Task
from pipeline.vocabulary import Split
from robustgym.agents import Agent, hint_for
from robustgym.env import Env, Limits
from robustgym.release import Release
from robustgym.trajectory import Trajectory, dumps

Progress = Callable[[int, int, Trajectory], None]
EpisodeKey = tuple[str, int]  # (task_id, trial)


class ResumeError(ValueError):
    """The recorded trajectories do not belong to this run (another release, agent or split)."""


def play_episode(env: Env, agent: Agent, task: Task, trial: int, *, clean_task: Task | None = None,
                 seed: int = 0) -> Trajectory:
    """Play one episode of ``task`` in ``env`` and return its trajectory (never raises for the agent)."""
    hint = hint_for(task, agent.privilege, clean_task)
    observation = env.reset(task.task_id, trial=trial)
    try:
        agent.run(env, observation, hint, seed=seed * 1_000_003 + trial)
    except Exception as exc:  # noqa: BLE001 - an agent's failure is recorded, not fatal
        env.abandon(f"the agent raised {type(exc).__name__}: {exc}")
    if not env.done:
        env.abandon("the agent returned without submitting")
    return env.result.trajectory


class _Recorder:
    """Appends finished trajectories to the file and reports progress, one thread at a time."""

    def __init__(self, path: Path | None, progress: Progress | None, total: int, done: int):
        self.path, self.progress, self.total, self.done = (Path(path) if path else None), progress, total, done
        self.new: dict[EpisodeKey, Trajectory] = {}
        self.lock = threading.Lock()
        self.closed = False
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def add(self, trajectory: Trajectory) -> None:
        with self.lock:
            if self.closed:  # interrupted: nothing more is recorded
                return
            if self.path:
                with self.path.open("a", encoding="utf-8") as f:
                    f.write(dumps(trajectory) + "\n")
            self.new[(trajectory.task_id, trajectory.trial)] = trajectory
            self.done += 1
            if self.progress:
                self.progress(self.done, self.total, trajectory)

    def close(self) -> None:
        with self.lock:
            self.closed = True


def _check_recorded(recorded: Sequence[Trajectory], release: Release, agent: Agent,
                    planned: set[EpisodeKey]) -> dict[EpisodeKey, Trajectory]:
    out: dict[EpisodeKey, Trajectory] = {}
    for t in recorded:
        key = (t.task_id, t.trial)
        where = f"recorded episode {t.episode_id}"
        if t.release != release.version:
            raise ResumeError(f"{where} is from release {t.release}, not {release.version}")
        if t.agent != agent.name:
            raise ResumeError(f"{where} was played by agent {t.agent!r}, not {agent.name!r}")
        if key not in planned:
            raise ResumeError(f"{where} is not among this run's episodes (another split, task list or more trials?)")
        if key in out:
            raise ResumeError(f"{where} is recorded twice (two runs writing one file?)")
        out[key] = t
    return out


def run_agent(release: Release, agent: Agent, *, split: Split | str | None = None, trials: int = 1,
              limits: Limits = Limits(), trajectory_path: Path | None = None, seed: int = 0,
              task_ids: list[str] | None = None, concurrency: int = 1, recorded: Sequence[Trajectory] = (),
              progress: Progress | None = None) -> list[Trajectory]:
    """Play every task of ``split`` (all splits when None) ``trials`` times; returns the trajectories
    (``recorded`` ones included), in task order then trial."""
    if trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    tasks = release.tasks(split)
    if task_ids is not None:
        wanted = set(task_ids)
        tasks = tuple(t for t in tasks if t.task_id in wanted)
    if not tasks:
        raise ValueError(f"release {release.version} has no task in split {split!r}")
    plan = [(task, trial) for task in tasks for trial in range(trials)]
    done = _check_recorded(recorded, release, agent, {(t.task_id, trial) for t, trial in plan})
    todo = [(task, trial) for task, trial in plan if (task.task_id, trial) not in done]
    recorder = _Recorder(trajectory_path, progress, len(plan), len(done))

    def clean_of(task: Task) -> Task | None:
        return release.task(task.clean_task_id) if task.clean_task_id and task.clean_task_id in release else None

    env = Env(release, limits=limits, agent_name=agent.name)
    workers: list[threading.Thread] = []
    try:
        if concurrency == 1 or len(todo) <= 1:
            for task, trial in todo:
                recorder.add(play_episode(env, agent, task, trial, clean_task=clean_of(task), seed=seed))
        else:
            workers = _run_threads(env, agent, todo, concurrency, recorder, clean_of, seed)
    except BaseException:
        recorder.close()
        raise
    finally:
        if not any(w.is_alive() for w in workers):  # a worker still in an episode keeps the instance open
            env.close()
    results = {**done, **recorder.new}
    return [results[(task.task_id, trial)] for task, trial in plan]


def _run_threads(env: Env, agent: Agent, todo: list[tuple[Task, int]], concurrency: int, recorder: _Recorder,
                 clean_of: Callable[[Task], Task | None], seed: int) -> list[threading.Thread]:
    """Play ``todo`` in ``concurrency`` daemon threads; returns them (all finished unless interrupted)."""
    jobs: queue.SimpleQueue = queue.SimpleQueue()
    for item in todo:
        jobs.put(item)
    stop = threading.Event()
    failures: list[BaseException] = []

    def work() -> None:
        worker = env.worker()
        try:
            while not stop.is_set():
                try:
                    task, trial = jobs.get_nowait()
                except queue.Empty:
                    return
                recorder.add(play_episode(worker, agent, task, trial, clean_task=clean_of(task), seed=seed))
        except BaseException as exc:  # noqa: BLE001 - the environment failed: stop every worker, report it
            failures.append(exc)
            stop.set()
        finally:
            worker.close()  # ends no episode of another thread: each worker has its own

    # Daemon threads: after Ctrl-C the process may exit while a worker waits on an endpoint.
    threads = [threading.Thread(target=work, name=f"episode-worker-{i}", daemon=True)
               for i in range(min(concurrency, len(todo)))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.2)  # short waits, so Ctrl-C reaches the main thread
    except BaseException:
        stop.set()
        recorder.close()
        deadline = time.monotonic() + 2.0
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        raise
    if failures:
        raise failures[0]
    return threads

"""Concurrent and resumed evaluations: ``--concurrency N`` gives the same episodes as a serial run for
a deterministic agent; an interrupted run resumes from its trajectories.jsonl without playing an
episode twice or recording one twice, even when the interrupt cut a line in half."""

import io
import json

import pytest

from robustgym.commands.eval import ProgressBar
from robustgym.agents import make_agent
from robustgym.cli import main
from robustgym.runner import ResumeError, run_agent
from robustgym.trajectory import read_jsonl, recover_jsonl


def played(trajectories) -> list[tuple]:
    """What an episode did and how it was graded, without its timings."""
    return [(t.task_id, t.trial, tuple((s.tool, json.dumps(s.arguments, sort_keys=True), s.content) for s in t.steps),
             json.dumps(t.submission, sort_keys=True), t.reward, t.outcome) for t in trajectories]


class Interrupting:
    """Plays like ``inner`` and raises KeyboardInterrupt when episode number ``after`` starts."""


    def __init__(self, inner, after: int):
        self.inner, self.after, self.started = inner, after, 0
        self.name, self.privilege = inner.name, inner.privilege

    def run(self, env, observation, hint, *, seed):
        self.started += 1
        if self.started > self.after:
            raise KeyboardInterrupt
        self.inner.run(env, observation, hint, seed=seed)


SUBSET = 24  # tasks of the release played here (clean tasks and twins): enough for 48 episodes in 2 trials


@pytest.fixture(scope="module")
def subset(pipeline_release):
    tasks = pipeline_release.tasks()
    chosen = [t.task_id for t in tasks[:SUBSET]]
    assert any(t.variant == "noise" for t in tasks[:SUBSET]) and any(t.variant == "clean" for t in tasks[:SUBSET])
    return chosen


@pytest.fixture(scope="module")
def serial(pipeline_release, subset):
    return run_agent(pipeline_release, make_agent("checking"), trials=2, task_ids=subset)


def test_a_concurrent_run_plays_the_same_episodes_as_a_serial_one(pipeline_release, subset, serial, tmp_path):
    path = tmp_path / "trajectories.jsonl"
    concurrent = run_agent(pipeline_release, make_agent("checking"), trials=2, concurrency=4, trajectory_path=path,
                           task_ids=subset)
    assert played(concurrent) == played(serial)  # same order too: task order, then trial
    written = read_jsonl(path)
    assert sorted(played(written)) == sorted(played(serial))


def test_an_interrupted_run_resumes_without_replaying_or_duplicating_an_episode(pipeline_release, subset, serial,
                                                                              tmp_path):
    path = tmp_path / "trajectories.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_agent(pipeline_release, Interrupting(make_agent("checking"), after=7), trials=2, trajectory_path=path,
                  task_ids=subset)
    first = path.read_bytes()
    assert len(first.splitlines()) == 7
    with path.open("ab") as f:
        f.write(first.splitlines()[0][:50])  # a line cut short by the stop
    recorded = recover_jsonl(path)
    assert len(recorded) == 7 and path.read_bytes() == first  # the torn line is gone
    counting = Interrupting(make_agent("checking"), after=10 ** 9)
    resumed = run_agent(pipeline_release, counting, trials=2, trajectory_path=path, recorded=recorded,
                        task_ids=subset)
    assert counting.started == len(serial) - 7  # only the missing episodes were played
    assert played(resumed) == played(serial)
    lines = path.read_bytes()
    assert lines.startswith(first) and len(lines.splitlines()) == len(serial)
    assert len({(t.task_id, t.trial) for t in read_jsonl(path)}) == len(serial)


def test_a_concurrent_run_interrupted_records_only_whole_episodes_and_resumes(pipeline_release, subset, serial,
                                                                              tmp_path):
    path = tmp_path / "trajectories.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_agent(pipeline_release, Interrupting(make_agent("checking"), after=9), trials=2, concurrency=3,
                  trajectory_path=path, task_ids=subset)
    recorded = recover_jsonl(path)
    assert 0 < len(recorded) <= 9
    resumed = run_agent(pipeline_release, make_agent("checking"), trials=2, concurrency=3, trajectory_path=path,
                        recorded=recorded, task_ids=subset)
    assert played(resumed) == played(serial)
    assert sorted(played(read_jsonl(path))) == sorted(played(serial))


def test_recorded_episodes_of_another_agent_or_split_are_refused(pipeline_release, subset, serial):
    with pytest.raises(ResumeError, match="played by agent 'checking', not 'naive'"):
        run_agent(pipeline_release, make_agent("naive"), trials=2, recorded=serial[:3], task_ids=subset)
    test_ids = {t.task_id for t in pipeline_release.tasks("test")}
    other = next(t for t in serial if t.task_id not in test_ids)
    with pytest.raises(ResumeError, match="not among this run's episodes"):
        run_agent(pipeline_release, make_agent("checking"), split="test", trials=2, recorded=[other])
    with pytest.raises(ResumeError, match="recorded twice"):
        run_agent(pipeline_release, make_agent("checking"), trials=2, recorded=[serial[0], serial[0]],
                  task_ids=subset)


def test_a_damaged_line_before_the_end_is_an_error_naming_the_line(tmp_path, serial):
    path = tmp_path / "trajectories.jsonl"
    path.write_text("{broken\n" + json.dumps(serial[0].to_dict()) + "\n")
    with pytest.raises(ValueError, match="trajectories.jsonl:1"):
        recover_jsonl(path)


def test_eval_resume_finishes_the_run_and_reports_every_episode_once(pipeline_release, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    with pytest.raises(KeyboardInterrupt):
        run_agent(pipeline_release, Interrupting(make_agent("naive"), after=5), split="test",
                  trajectory_path=out / "trajectories.jsonl")
    assert main(["eval", "--release", str(pipeline_release.root), "--agent", "naive", "--split", "test",
                 "--out", str(out), "--base-database", str(pipeline_release.base_database)]) == 2
    assert "--resume continues it" in capsys.readouterr().err
    assert main(["eval", "--release", str(pipeline_release.root), "--agent", "naive", "--split", "test",
                 "--out", str(out), "--base-database", str(pipeline_release.base_database), "--resume",
                 "--concurrency", "2"]) == 0
    report = json.loads((out / "report.json").read_text())
    n = len(pipeline_release.tasks("test"))
    assert report["episodes"] == n and report["meta"]["resumed_episodes"] == 5
    assert len(read_jsonl(out / "trajectories.jsonl")) == n
    err = capsys.readouterr().err
    assert "took" in err and f"{n}/{n}" in err


def test_progress_shows_the_rate_and_an_eta_of_this_run_only(serial):
    stream = io.StringIO()
    bar = ProgressBar("checking test", stream=stream, already=40)
    for done in range(41, 51):
        bar(done, 100, serial[0])
    lines = stream.getvalue().splitlines()
    assert lines and all("ETA " in line for line in lines) and "50/100" in lines[-1]
    bar(100, 100, serial[0])
    assert "took" in stream.getvalue().splitlines()[-1]


def test_resuming_with_another_agent_exits_2(pipeline_release, tmp_path, capsys):
    out = tmp_path / "run"
    run_agent(pipeline_release, make_agent("naive"), split="test", trajectory_path=out / "trajectories.jsonl",
              task_ids=[pipeline_release.tasks("test")[0].task_id])
    assert main(["eval", "--release", str(pipeline_release.root), "--agent", "oracle", "--split", "test",
                 "--out", str(out), "--base-database", str(pipeline_release.base_database), "--resume"]) == 2
    assert "played by agent 'naive', not 'oracle'" in capsys.readouterr().err

"""Trajectories are logged per episode as JSONL, read back into equal objects, and turn into a
chat transcript for fine-tuning."""

import json

import pytest

from robustgym.env import Env
from robustgym.trajectory import Trajectory, read_jsonl, write_jsonl


@pytest.fixture(scope="module")
def logged(demo_release, tmp_path_factory):
    path = tmp_path_factory.mktemp("traj") / "trajectories.jsonl"
    task = next(t for t in demo_release.tasks("test") if t.answer_type == "number" and t.variant == "clean")
    with Env(demo_release, trajectory_path=path, agent_name="scripted") as env:
        env.reset(task.task_id)
        env.sql("SELECT count(*) FROM patients")
        env.sql("SELECT * FROM duckdb_databases()")
        env.python("print(query('SELECT 1 AS one'))")
        env.submit("answered", task.answer.number)
        env.reset(task.task_id, trial=1)
        env.sql("SELECT 1")
        env.reset(task.task_id, trial=2)  # the trial-1 episode is ended without a submission
        env.submit("no_evidence")
    return path, task


def test_every_episode_is_one_line_with_its_calls_submission_reward_and_timings(logged):
    path, task = logged
    lines = path.read_text().splitlines()
    assert len(lines) == 3
    first = json.loads(lines[0])
    assert first["task_id"] == task.task_id and first["question"].startswith(task.question)
    assert [s["tool"] for s in first["steps"]] == ["sql", "sql", "python", "submit"]
    assert first["steps"][1]["error_kind"] == "sandbox_violation"
    assert first["submission"] == {"status": "answered", "answer": task.answer.number}
    assert first["reward"] == 1.0 and first["outcome"] == "correct"
    assert first["reset_ms"] >= 0 and first["total_ms"] >= sum(s["elapsed_ms"] for s in first["steps"]) * 0.5
    second = json.loads(lines[1])
    assert second["submission"] is None and second["outcome"] == "no_submission" and second["reward"] == 0.0


def test_a_trajectory_file_round_trips(logged, tmp_path):
    path, _ = logged
    trajectories = read_jsonl(path)
    assert all(isinstance(t, Trajectory) for t in trajectories)
    copy = tmp_path / "copy.jsonl"
    write_jsonl(copy, trajectories)
    assert copy.read_bytes() == path.read_bytes()
    assert read_jsonl(copy) == trajectories


def test_unknown_or_missing_keys_are_rejected(logged):
    path, _ = logged
    data = json.loads(path.read_text().splitlines()[0])
    with pytest.raises(ValueError, match="unknown keys"):
        Trajectory.from_dict({**data, "extra": 1})
    data.pop("reward")
    with pytest.raises(ValueError, match="missing keys"):
        Trajectory.from_dict(data)


def test_a_trajectory_becomes_a_chat_transcript_for_fine_tuning(logged):
    path, _ = logged
    messages = read_jsonl(path)[0].to_messages()
    assert [m["role"] for m in messages[:4]] == ["system", "user", "assistant", "tool"]
    call = messages[2]["tool_calls"][0]
    assert call["function"]["name"] == "sql" and json.loads(call["function"]["arguments"])["query"]
    assert messages[3]["tool_call_id"] == call["id"]
    assert messages[-2]["tool_calls"][0]["function"]["name"] == "submit"


def test_a_trajectory_records_its_patient_and_older_lines_without_it_still_read(logged):
    path, task = logged
    first = read_jsonl(path)[0]
    assert first.subject_id == task.subject_id is not None
    data = first.to_dict()
    del data["subject_id"]
    assert Trajectory.from_dict(data).subject_id is None

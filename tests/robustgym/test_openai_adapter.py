"""The OpenAI-compatible adapter end to end against a real local HTTP server (127.0.0.1, started by
the test) that serves ``/v1/chat/completions`` from a script of assistant messages with tool calls,
and can answer 429/500 (with Retry-After), reply slowly, or send a malformed body; it records every
request it receives."""

import json
import threading
import time

import pytest

from robustgym.agents import make_agent
from robustgym.agents.local_endpoint import LocalEndpoint, Reply
from robustgym.agents.openai_compat import EndpointConfig, EndpointError, OpenAICompatAgent
from robustgym.cli import main
from robustgym.env import Env
from robustgym.runner import run_agent
from robustgym.trajectory import read_jsonl


def tool_call(i: int, name: str, arguments) -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": raw}}


def scripted_endpoint(script) -> LocalEndpoint:
    """Replays ``script`` in order, the last entry repeating. An entry is ``(http_status, message)`` or
    a dict of ``Reply`` fields: ``status`` (default 200), ``message``, ``headers``, ``delay`` (seconds
    before the reply) and ``raw`` (a body sent as is, e.g. a malformed one)."""
    script, lock = list(script), threading.Lock()

    def respond(body: dict) -> Reply:
        with lock:
            entry = script.pop(0) if len(script) > 1 else script[0]
        if isinstance(entry, tuple):
            return Reply(status=entry[0], message=entry[1])
        return Reply(**entry)

    return LocalEndpoint(respond)


def test_the_adapter_plays_tool_calls_and_feeds_results_back(demo_release):
    task = next(t for t in demo_release.tasks("test") if t.noise_type and t.noise_type.value == "missing_evidence")
    script = [
        (200, {"role": "assistant", "content": None, "tool_calls": [tool_call(0, "sql", {"query": task.gold_sql})]}),
        (200, {"role": "assistant", "content": None, "tool_calls": [
            tool_call(1, "python", {"code": "print(len(query('SELECT 1 AS a UNION ALL SELECT 2')))"}),
            tool_call(2, "sql", "{not json")]}),
        (200, {"role": "assistant", "content": "I think there is no result."}),
        (200, {"role": "assistant", "content": None, "tool_calls": [tool_call(3, "submit", {"status": "no_evidence"})]}),
    ]
    with scripted_endpoint(script) as server, Env(demo_release, agent_name="openai") as env:
        agent = OpenAICompatAgent(EndpointConfig(base_url=server.url, model="fake-model", api_key="sk-test"))
        observation = env.reset(task.task_id)
        agent.run(env, observation, None, seed=7)
        assert env.done and env.result.passed and env.result.reward == 1.0
        first, second, third, fourth = (r["body"] for r in server.requests)
    assert all(r["path"] == "/v1/chat/completions" for r in server.requests)
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-test"
    assert first["model"] == "fake-model" and first["seed"] == 7
    assert [t["function"]["name"] for t in first["tools"]] == ["sql", "python", "submit"]
    assert first["messages"][0]["role"] == "system" and task.question in first["messages"][1]["content"]
    tool_reply = second["messages"][-1]
    assert tool_reply["role"] == "tool" and tool_reply["tool_call_id"] == "call_0"
    assert "(1 row)" in tool_reply["content"] and "NULL" in tool_reply["content"]
    replies = [m for m in third["messages"] if m["role"] == "tool"][-2:]
    assert replies[0]["content"].strip() == "2"
    assert replies[1]["content"].startswith("ERROR (bad_arguments)")
    assert fourth["messages"][-1] == {"role": "user", "content": "Use the tools to check the record, then finish "
                                                                 "with submit(status, answer)."}
    steps = env.result.trajectory.steps
    assert [s.tool for s in steps] == ["sql", "python", "sql", "submit"]


def test_a_busy_endpoint_is_retried(demo_release):
    task = demo_release.tasks("test")[0]
    script = [(503, {}), (200, {"role": "assistant", "content": None, "tool_calls": [
        tool_call(0, "submit", {"status": "answered", "answer": task.answer.number})]})]
    with scripted_endpoint(script) as server, Env(demo_release) as env:
        agent = OpenAICompatAgent(EndpointConfig(base_url=server.url, model="m", retries=2))
        agent.run(env, env.reset(task.task_id), None, seed=0)
        assert env.result.passed and len(server.requests) == 2


def test_an_endpoint_that_keeps_failing_raises_a_clear_error(demo_release):
    with scripted_endpoint([(400, {})]) as server, Env(demo_release) as env:
        agent = OpenAICompatAgent(EndpointConfig(base_url=server.url, model="m"))
        with pytest.raises(EndpointError, match="HTTP 400"):
            agent.run(env, env.reset(demo_release.tasks()[0].task_id), None, seed=0)


def test_configuration_comes_from_the_environment_when_the_agent_is_made(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ROBUSTGYM_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("ROBUSTGYM_LLM_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(ValueError, match="ROBUSTGYM_LLM_BASE_URL.*ROBUSTGYM_LLM_MODEL"):
        make_agent("openai")
    monkeypatch.setenv("ROBUSTGYM_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("ROBUSTGYM_LLM_MODEL", "local")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    config = make_agent("openai").config
    assert (config.base_url, config.model, config.api_key) == ("http://127.0.0.1:1/v1", "local", "sk-env")


def test_robustgym_eval_runs_an_llm_agent_through_the_endpoint(demo_release_dir, tmp_path, monkeypatch):
    script = [(200, {"role": "assistant", "content": None, "tool_calls": [
        tool_call(0, "sql", {"query": "SELECT count(*) FROM patients"}),
        tool_call(1, "submit", {"status": "no_evidence"})]})]
    with scripted_endpoint(script) as server:
        monkeypatch.setenv("ROBUSTGYM_LLM_BASE_URL", server.url)
        monkeypatch.setenv("ROBUSTGYM_LLM_MODEL", "fake")
        code = main(["eval", "--release", str(demo_release_dir), "--agent", "openai", "--split", "test",
                     "--out", str(tmp_path), "--quiet"])
    assert code == 0
    trajectories = read_jsonl(tmp_path / "trajectories.jsonl")
    assert trajectories and all(t.agent == "openai" and t.submission == {"status": "no_evidence", "answer": None}
                                for t in trajectories)
    assert any(t.passed for t in trajectories) and not all(t.passed for t in trajectories)


def submit_call(status="no_evidence", answer=None) -> dict:
    arguments = {"status": status} if answer is None else {"status": status, "answer": answer}
    return {"role": "assistant", "content": None, "tool_calls": [tool_call(9, "submit", arguments)]}


def play(release, server, **config):
    task = next(t for t in release.tasks("test") if t.noise_type and t.noise_type.value == "missing_evidence")
    with Env(release, agent_name="openai") as env:
        agent = OpenAICompatAgent(EndpointConfig(base_url=server.url, model="m", **config))
        agent.run(env, env.reset(task.task_id), None, seed=0)
        return env.result


def test_429_and_500_are_retried_and_retry_after_is_honoured(demo_release, monkeypatch):
    import robustgym.agents.openai_compat as adapter

    waits, real_sleep, agent_thread = [], time.sleep, threading.get_ident()

    def sleep(seconds: float) -> None:
        """The agent's waits are noted, not slept; any other thread sleeps as it asked."""
        if threading.get_ident() == agent_thread:
            waits.append(seconds)
        else:
            real_sleep(seconds)

    monkeypatch.setattr(adapter.time, "sleep", sleep)
    script = [{"status": 429, "headers": {"Retry-After": "7"}}, {"status": 500}, (200, submit_call())]
    with scripted_endpoint(script) as server:
        result = play(demo_release, server, retries=3, backoff_s=0.25)
    assert result.passed and len(server.requests) == 3
    assert waits == [7.0, 0.5]  # as the 429 asked; then the backoff for the second retry (0.25 * 2)


def test_a_reply_slower_than_the_timeout_is_abandoned_and_retried(demo_release):
    script = [{"delay": 1.5, "message": submit_call("answered", 1)}, (200, submit_call())]
    with scripted_endpoint(script) as server:
        result = play(demo_release, server, timeout_s=0.4, retries=2, backoff_s=0.01)
    # the slow reply (an answer) was given up on; the retry's reply (no_evidence) was played
    assert result.passed and result.trajectory.submission == {"status": "no_evidence", "answer": None}
    assert len(server.requests) == 2


def test_a_slow_reply_within_the_timeout_is_simply_awaited(demo_release):
    with scripted_endpoint([{"delay": 0.3, "message": submit_call()}]) as server:
        result = play(demo_release, server, timeout_s=5, retries=0)
    assert result.passed and len(server.requests) == 1


def test_a_malformed_reply_is_asked_again(demo_release):
    script = [{"raw": b'{"choices": [{"message": {"role": "assist'}, (200, submit_call())]
    with scripted_endpoint(script) as server:
        result = play(demo_release, server, retries=2, backoff_s=0.01)
    assert result.passed and len(server.requests) == 2


def test_an_endpoint_that_keeps_sending_garbage_fails_the_episode_and_the_run_goes_on(demo_release):
    with scripted_endpoint([{"raw": b"<html>502 Bad Gateway</html>"}]) as server:
        agent = OpenAICompatAgent(EndpointConfig(base_url=server.url, model="m", retries=1, backoff_s=0.01))
        with Env(demo_release) as env:
            with pytest.raises(EndpointError, match="not JSON.*after 2 attempts"):
                agent.run(env, env.reset(demo_release.tasks("test")[0].task_id), None, seed=0)
        trajectories = run_agent(demo_release, agent, split="test")
    assert len(trajectories) == len(demo_release.tasks("test"))
    assert all(t.outcome == "no_submission" and "EndpointError" in t.error for t in trajectories)


def test_json_that_is_not_a_chat_completion_is_a_clear_error(demo_release):
    with scripted_endpoint([{"raw": b'{"object": "error", "message": "model not loaded"}'}]) as server, \
            Env(demo_release) as env:
        agent = OpenAICompatAgent(EndpointConfig(base_url=server.url, model="m"))
        with pytest.raises(EndpointError, match="not a chat completion.*model not loaded"):
            agent.run(env, env.reset(demo_release.tasks("test")[0].task_id), None, seed=0)


def test_concurrent_llm_episodes_share_one_endpoint(demo_release_dir, tmp_path, monkeypatch):
    script = [{"delay": 0.2, "message": submit_call()}]
    with scripted_endpoint(script) as server:
        monkeypatch.setenv("ROBUSTGYM_LLM_BASE_URL", server.url)
        monkeypatch.setenv("ROBUSTGYM_LLM_MODEL", "fake")
        code = main(["eval", "--release", str(demo_release_dir), "--agent", "openai", "--out", str(tmp_path),
                     "--quiet", "--concurrency", "8"])
    trajectories = read_jsonl(tmp_path / "trajectories.jsonl")
    assert code == 0 and len(trajectories) == len(server.requests) > 8
    assert len({(t.task_id, t.trial) for t in trajectories}) == len(trajectories)
    assert server.most_in_flight > 1  # episodes did wait on the endpoint at the same time (speed: benchmarks/)

"""The OpenAI-compatible adapter against a small local fake server (127.0.0.1) that replays a
script of assistant messages with tool calls and records every request it receives."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from robustgym.agents import make_agent
from robustgym.agents.openai_compat import EndpointConfig, EndpointError, OpenAICompatAgent
from robustgym.cli import main
from robustgym.env import Env
from robustgym.trajectory import read_jsonl


def tool_call(i: int, name: str, arguments) -> dict:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": raw}}


def completion(message: dict) -> dict:
    return {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": message,
                                                                 "finish_reason": "tool_calls"}]}


class FakeServer:
    """Replays ``script`` (a list of (http_status, message)) in order; the last entry repeats."""

    def __init__(self, script):
        self.script, self.requests, self.headers = list(script), [], []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body})
                server.headers.append(dict(self.headers))
                status, message = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                payload = json.dumps(completion(message) if status == 200 else {"error": "busy"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


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
    with FakeServer(script) as server, Env(demo_release, agent_name="openai") as env:
        agent = OpenAICompatAgent(EndpointConfig(base_url=server.url, model="fake-model", api_key="sk-test"))
        observation = env.reset(task.task_id)
        agent.run(env, observation, None, seed=7)
        assert env.done and env.result.passed and env.result.reward == 1.0
        first, second, third, fourth = (r["body"] for r in server.requests)
    assert all(r["path"] == "/v1/chat/completions" for r in server.requests)
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
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
    with FakeServer(script) as server, Env(demo_release) as env:
        agent = OpenAICompatAgent(EndpointConfig(base_url=server.url, model="m", retries=2))
        agent.run(env, env.reset(task.task_id), None, seed=0)
        assert env.result.passed and len(server.requests) == 2


def test_an_endpoint_that_keeps_failing_raises_a_clear_error(demo_release):
    with FakeServer([(400, {})]) as server, Env(demo_release) as env:
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
    with FakeServer(script) as server:
        monkeypatch.setenv("ROBUSTGYM_LLM_BASE_URL", server.url)
        monkeypatch.setenv("ROBUSTGYM_LLM_MODEL", "fake")
        code = main(["eval", "--release", str(demo_release_dir), "--agent", "openai", "--split", "test",
                     "--out", str(tmp_path), "--quiet"])
    assert code == 0
    trajectories = read_jsonl(tmp_path / "trajectories.jsonl")
    assert trajectories and all(t.agent == "openai" and t.submission == {"status": "no_evidence", "answer": None}
                                for t in trajectories)
    assert any(t.passed for t in trajectories) and not all(t.passed for t in trajectories)

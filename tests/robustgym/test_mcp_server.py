"""``robustgym serve --mcp`` is a Model Context Protocol server: tested with the ``mcp`` package's own
client, which launches it over stdio. Its tools are the ones declared in robustgym/tools.py (the
same schemas the OpenAI adapter sends); an episode played through it is graded and logged; errors
come back as tool errors and the server keeps serving."""

import sys

import anyio
import pytest

from robustgym import tools
from robustgym.cli import main
from robustgym.trajectory import read_jsonl


async def _session(release_dir, trajectories, task):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "robustgym.cli", "serve", "--mcp", "--release", str(release_dir), "--trajectories", str(trajectories)])
    seen = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        seen["init"] = await session.initialize()
        seen["tools"] = (await session.list_tools()).tools

        async def call(name, arguments):
            return await session.call_tool(name, arguments)

        seen["before_reset"] = await call("sql", {"query": "SELECT 1"})
        seen["unknown"] = await call("drop_table", {})
        seen["bad_trial"] = await call("reset", {"task_id": task.task_id, "trial": "first"})
        seen["list"] = await call("list_tasks", {"split": "test", "limit": 2})
        seen["reset"] = await call("reset", {"task_id": task.task_id})
        seen["sql"] = await call("sql", {"query": "SELECT count(*) AS n FROM patients"})
        seen["escape"] = await call("sql", {"query": "SELECT * FROM rg_base.main.patients"})
        seen["python"] = await call("python", {"code": "print(query('SELECT 41 + 1 AS x')[0]['x'])"})
        seen["submit"] = await call("submit", {"status": "answered", "answer": task.answer.number})
        seen["after_submit"] = await call("sql", {"query": "SELECT 1"})
    return seen


@pytest.fixture(scope="module")
def served(demo_release_dir, demo_release, tmp_path_factory):
    task = next(t for t in demo_release.tasks("test") if t.variant == "clean" and t.answer_type == "number")
    trajectories = tmp_path_factory.mktemp("mcp") / "trajectories.jsonl"
    seen = anyio.run(_session, demo_release_dir, trajectories, task)
    return seen, task, trajectories


def test_the_server_offers_the_tools_declared_in_tools_py(served):
    seen, _, _ = served
    assert seen["init"].server_info.name == "robustgym"
    offered = {t.name: t for t in seen["tools"]}
    assert list(offered) == ["sql", "python", "submit", "reset", "list_tasks"]
    for name, spec in {**tools.TOOLS, **tools.HARNESS_TOOLS}.items():
        assert offered[name].input_schema == spec.parameters and offered[name].description == spec.description
    openai = {d["function"]["name"]: d["function"]["parameters"] for d in tools.declarations()}
    assert all(offered[name].input_schema == schema for name, schema in openai.items())


def test_an_episode_played_over_mcp_is_graded_and_logged(served, demo_release):
    seen, task, trajectories = served
    listed = seen["list"].structured_content
    assert listed["total"] == len(demo_release.tasks("test")) and len(listed["task_ids"]) == 2
    reset = seen["reset"]
    assert not reset.is_error and task.question in reset.content[0].text
    assert reset.structured_content["answer_type"] == "number"
    assert seen["sql"].content[0].text.splitlines()[1] == "100"  # 100 patients in the demo
    assert seen["python"].content[0].text.strip() == "42"
    assert seen["submit"].structured_content == {"reward": 1.0, "passed": True, "outcome": "correct", "error": None}
    logged = read_jsonl(trajectories)
    assert [(t.task_id, t.agent, t.outcome) for t in logged] == [(task.task_id, "mcp", "correct")]
    assert [s.tool for s in logged[0].steps] == ["sql", "sql", "python", "submit"]


def test_errors_come_back_as_tool_errors_and_the_server_keeps_serving(served):
    seen, _, _ = served
    expectations = {"before_reset": "ERROR (episode_state)",
                    "unknown": "ERROR (bad_arguments): unknown tool 'drop_table'",
                    "bad_trial": "ERROR (bad_arguments): reset: trial must be an integer",
                    "escape": "ERROR (sandbox_violation)", "after_submit": "ERROR (episode_state)"}
    for key, start in expectations.items():
        assert seen[key].is_error and seen[key].content[0].text.startswith(start), (key, seen[key].content[0].text)
    assert "'list_tasks', 'python', 'reset', 'sql', 'submit'" in seen["unknown"].content[0].text


def test_serving_a_folder_that_is_not_a_release_exits_2(tmp_path, capsys):
    assert main(["serve", "--mcp", "--release", str(tmp_path)]) == 2
    assert "no manifest.json" in capsys.readouterr().err

"""The environment as a Model Context Protocol server (``robustgym serve --mcp``), on the ``mcp`` package.

An MCP client (an agent framework, or a harness driving one) gets the episode tools ``sql``,
``python`` and ``submit`` and the harness tools ``reset`` and ``list_tasks``. Their names,
descriptions and JSON schemas are the ``ToolSpec``s of ``robustgym/tools.py``, the same the OpenAI
adapter sends, so both sides cannot drift. A call goes through ``Env.call`` (episode tools) or
``tools.invoke_harness``: whatever the client sends, it gets a result (errors as ``is_error`` text in
the environment's ``ERROR (<kind>): ...`` form), and every finished episode is graded and, with
``trajectory_path``, appended to a JSONL trajectory file like ``robustgym eval`` writes.

One server serves one client over stdio, one call at a time (an ``Env`` is single-threaded); tool
calls run in a worker thread so the protocol loop stays responsive. Task ids name the noise type of
a twin (``...~missing_evidence``): a harness that wants the model blind to it keeps ``reset`` and
``list_tasks`` to itself and hands the model only the reset text and the episode tools.
"""

import threading
from pathlib import Path
from typing import Any

from robustgym import tools
from robustgym.env import Env, Limits, TaskObservation
from robustgym.release import Release

SERVER_NAME = "robustgym"


class McpSession:
    """The ``tools.Harness`` the MCP server drives: one ``Env`` and the release's task lists."""

    def __init__(self, release: Release, *, limits: Limits = Limits(), trajectory_path: Path | None = None,
                 agent_name: str = "mcp"):
        self.release = release
        self.env = Env(release, limits=limits, trajectory_path=trajectory_path, agent_name=agent_name)
        self.lock = threading.Lock()

    def reset(self, task_id: str, *, trial: int = 0) -> TaskObservation:
        return self.env.reset(task_id, trial=trial)

    def task_ids(self, split: str | None) -> list[str]:
        return [t.task_id for t in self.release.tasks(split)]

    def call(self, name: str, arguments: Any) -> tools.Observation:
        """Run a tool by name: a harness tool or one of the episode's."""
        with self.lock:
            if name in tools.HARNESS_TOOLS:
                return tools.invoke_harness(self, name, arguments)
            if name in tools.TOOLS:
                return self.env.call(name, arguments)
            known = sorted(s.name for s in tool_specs())
            return tools.error_observation(
                name, tools.ToolArgumentError(f"unknown tool {name!r}; the tools are {known}"))

    def close(self) -> None:
        self.env.close()


def tool_specs() -> list[tools.ToolSpec]:
    """Every tool the server offers: the episode's, then the harness's."""
    return [*tools.TOOLS.values(), *tools.HARNESS_TOOLS.values()]


def build_server(session: McpSession):
    """The ``mcp`` low-level server whose tools are ``tool_specs()``, served by ``session``."""
    import anyio
    import mcp.types as types
    from mcp.server import Server

    declared = [types.Tool(name=s.name, description=s.description, input_schema=s.parameters) for s in tool_specs()]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=declared)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments if params.arguments is not None else {}
        observation = await anyio.to_thread.run_sync(session.call, params.name, arguments)
        structured = _structured(observation)
        return types.CallToolResult(content=[types.TextContent(type="text", text=observation.content)],
                                    structured_content=structured, is_error=not observation.ok)

    from importlib.metadata import PackageNotFoundError, version

    try:
        own_version = version("ehr-robustgym")
    except PackageNotFoundError:
        own_version = "0"
    return Server(SERVER_NAME, version=own_version,
                  instructions="Clean-Noise EHR tasks over MIMIC-IV: reset(task_id) starts an episode and returns "
                               "its instructions and question; sql, python and submit play it.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


def _structured(observation: tools.Observation) -> dict | None:
    """The machine-readable part of a result, for clients that read ``structured_content``."""
    if observation.tool == "submit" and observation.ok and observation.data is not None:
        grade = observation.data
        return {"reward": grade.reward, "passed": grade.passed, "outcome": grade.outcome.value, "error": grade.error}
    if observation.tool in ("reset", "list_tasks") and observation.ok:
        return observation.data
    return None


async def serve_stdio(release: Release, *, limits: Limits = Limits(), trajectory_path: Path | None = None,
                      agent_name: str = "mcp") -> None:
    """Serve ``release`` over stdin/stdout until the client closes the connection."""
    from mcp.server.stdio import stdio_server

    session = McpSession(release, limits=limits, trajectory_path=trajectory_path, agent_name=agent_name)
    server = build_server(session)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        session.close()

"""``robustgym serve --mcp --release PATH``: the environment as a Model Context Protocol server on stdio.

MCP clients launch it as a subprocess (e.g. ``{"command": "robustgym", "args": ["serve", "--mcp",
"--release", "releases/latest"]}``) and get the tools ``sql``, ``python``, ``submit``, ``reset`` and
``list_tasks``. Finished episodes go to ``--trajectories FILE`` when given. Nothing but the protocol
is written to stdout.
"""

import argparse
import sys
from pathlib import Path

from robustgym.commands.release_arguments import EXIT_BAD_RELEASE, add_release_arguments, open_release


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve", help="serve the environment's tools to Model Context Protocol clients (stdio)",
        description="Serve a release's environment as an MCP server over stdin/stdout: tools sql, python and "
                    "submit play an episode; reset and list_tasks let a harness choose the task.")
    p.add_argument("--mcp", action="store_true", required=True, help="speak the Model Context Protocol (stdio)")
    add_release_arguments(p)
    p.add_argument("--trajectories", type=Path, metavar="FILE",
                   help="append every finished episode to this JSONL file")
    p.add_argument("--agent-name", default="mcp", metavar="NAME",
                   help="the agent name recorded in trajectories (default mcp)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import anyio

    from robustgym.mcp_server import serve_stdio

    release = open_release(args)
    if release is None:
        return EXIT_BAD_RELEASE
    print(f"robustgym MCP server: release {release.version}, {len(release.tasks())} tasks (stdio)", file=sys.stderr)
    anyio.run(lambda: serve_stdio(release, trajectory_path=args.trajectories, agent_name=args.agent_name))
    return 0

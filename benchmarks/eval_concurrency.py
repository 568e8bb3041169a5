"""Episodes per second of ``run_agent(concurrency=N)`` with the OpenAI-compatible agent against a local
stub endpoint that answers every chat completion after a fixed latency (200 ms by default).

Every episode is two model turns, as a short real one is: the stub first asks for one ``sql`` call
(``SELECT count(*) FROM patients``), then, seeing the tool result, calls ``submit``. So an episode
waits about 2 x latency on the endpoint and spends a few milliseconds in the environment (reset,
statement check, query, grading, trajectory line). The work is waiting, so threads should give close
to N times the serial rate on this 2-core machine.

    python benchmarks/eval_concurrency.py [--release DIR --base-database FILE] [--episodes 96]
                                          [--latency-ms 200] [--levels 1 4 16]

Target: speed-up >= 0.8 x N for N up to 16. Prints a markdown table; paste it under
"Evaluation concurrency" in benchmarks/README.md.
"""

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from robustgym.agents.local_endpoint import LocalEndpoint, Reply
from robustgym.agents.openai_compat import EndpointConfig, OpenAICompatAgent
from robustgym.release import load_release
from robustgym.runner import run_agent


def stub_endpoint(latency_s: float) -> LocalEndpoint:
    """After ``latency_s``, a sql tool call, or submit once a tool replied."""

    def respond(body: dict) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            call = {"name": "submit", "arguments": json.dumps({"status": "no_evidence"})}
        else:
            call = {"name": "sql", "arguments": json.dumps({"query": "SELECT count(*) FROM patients"})}
        message = {"role": "assistant", "content": None,
                   "tool_calls": [{"id": "c", "type": "function", "function": call}]}
        return Reply(message=message, delay=latency_s)

    return LocalEndpoint(respond)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--release", type=Path, help="a release folder (default: build a small demo release)")
    parser.add_argument("--base-database", type=Path)
    parser.add_argument("--episodes", type=int, default=96)
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16])
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="robustgym-bench-") as work:
        if args.release:
            release_dir, base = args.release, args.base_database
        else:
            from environment import build_demo_release  # benchmarks/environment.py

            release_dir, base = build_demo_release(Path(work), per_cell=2)
        release = load_release(release_dir, base_database=base)
        tasks = release.tasks()
        trials = -(-args.episodes // len(tasks))
        task_ids = [t.task_id for t in tasks][: -(-args.episodes // trials)]
        episodes = len(task_ids) * trials
        rows = []
        with stub_endpoint(args.latency_ms / 1000) as stub:
            agent = OpenAICompatAgent(EndpointConfig(base_url=stub.url, model="stub", retries=0, timeout_s=30))
            for level in args.levels:
                before = len(stub.requests)
                started = time.perf_counter()
                trajectories = run_agent(release, agent, task_ids=task_ids, trials=trials, concurrency=level)
                seconds = time.perf_counter() - started
                failed = sum(t.outcome == "no_submission" for t in trajectories)
                rows.append((level, episodes, len(stub.requests) - before, seconds, episodes / seconds, failed))
    base_rate = rows[0][4]
    print(f"release {release.version}: {episodes} episodes ({len(task_ids)} tasks x {trials} trials), 2 model turns "
          f"each, stub latency {args.latency_ms:g} ms; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f} at the end\n")
    print("| concurrency N | episodes | requests | seconds | episodes/s | speed-up | speed-up / N | failed |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for level, n, requests, seconds, rate, failed in rows:
        speedup = rate / base_rate
        print(f"| {level} | {n} | {requests} | {seconds:.2f} | {rate:.2f} | {speedup:.2f}x | {speedup / level:.2f} | "
              f"{failed} |")


if __name__ == "__main__":
    main()

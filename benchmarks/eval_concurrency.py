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
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from robustgym.agents.openai_compat import EndpointConfig, OpenAICompatAgent
from robustgym.release import load_release
from robustgym.runner import run_agent


class StubEndpoint:
    """``/v1/chat/completions`` on 127.0.0.1: after ``latency_s``, a sql tool call, or submit once a tool replied."""

    def __init__(self, latency_s: float):
        self.latency_s, self.requests, self.lock = latency_s, 0, threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with stub.lock:
                    stub.requests += 1
                time.sleep(stub.latency_s)
                if body["messages"][-1]["role"] == "tool":
                    call = {"name": "submit", "arguments": json.dumps({"status": "no_evidence"})}
                else:
                    call = {"name": "sql", "arguments": json.dumps({"query": "SELECT count(*) FROM patients"})}
                message = {"role": "assistant", "content": None,
                           "tool_calls": [{"id": "c", "type": "function", "function": call}]}
                payload = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # 16 workers connect at once; the default backlog of 5 would refuse some
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
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
        with StubEndpoint(args.latency_ms / 1000) as stub:
            agent = OpenAICompatAgent(EndpointConfig(base_url=stub.url, model="stub", retries=0, timeout_s=30))
            for level in args.levels:
                before = stub.requests
                started = time.perf_counter()
                trajectories = run_agent(release, agent, task_ids=task_ids, trials=trials, concurrency=level)
                seconds = time.perf_counter() - started
                failed = sum(t.outcome == "no_submission" for t in trajectories)
                rows.append((level, episodes, stub.requests - before, seconds, episodes / seconds, failed))
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

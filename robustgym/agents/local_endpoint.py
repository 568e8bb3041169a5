"""An OpenAI-compatible ``/v1/chat/completions`` endpoint on 127.0.0.1 whose replies a function writes.

It lets a harness be tried offline: the adapter's tests script tool calls, errors, slow and malformed
replies with it, and ``benchmarks/eval_concurrency.py`` measures concurrency against a fixed latency.

    def respond(body: dict) -> Reply:          # called on the server's threads, one per request
        return Reply(message={"role": "assistant", "content": "done"})

    with LocalEndpoint(respond) as endpoint:   # endpoint.url -> "http://127.0.0.1:PORT/v1"
        ...
"""

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    """One HTTP reply: ``message`` (the assistant message) wrapped as a chat completion when the status is
    200, an error body otherwise; ``raw`` is sent as is instead (a malformed body); ``delay`` seconds
    pass before anything is sent."""

    message: dict | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: bytes | None = None

    def body(self) -> bytes:
        if self.raw is not None:
            return self.raw
        if self.status != 200:
            return json.dumps({"error": "busy"}).encode()
        choice = {"index": 0, "message": self.message,
                  "finish_reason": "tool_calls" if self.message and self.message.get("tool_calls") else "stop"}
        return json.dumps({"id": "x", "object": "chat.completion", "choices": [choice]}).encode()


class LocalEndpoint:
    """Serves every POST with ``respond(request body)``; records each request (``path``, ``body``,
    ``headers``) and the most requests it was answering at once (``most_in_flight``)."""

    def __init__(self, respond: Callable[[dict], Reply]):
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with endpoint.lock:
                    endpoint.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                    endpoint.in_flight += 1
                    endpoint.most_in_flight = max(endpoint.most_in_flight, endpoint.in_flight)
                try:
                    self.send(respond(body))
                finally:
                    with endpoint.lock:
                        endpoint.in_flight -= 1

            def send(self, reply: Reply):
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a slow reply)

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # many workers connect at once; the default backlog of 5 would refuse some
            daemon_threads = True

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "LocalEndpoint":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

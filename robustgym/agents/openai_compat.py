"""An agent backed by any OpenAI-compatible chat-completions endpoint, using tool calls.

The model gets the environment's instructions as the system message, the question as the user
message and the tools from ``robustgym.tools.declarations()``; each tool call it makes is run in
the environment and answered with a ``tool`` message, until it calls ``submit`` or runs out of
turns. Configuration comes from the environment when the agent is made (never at import):

- ``ROBUSTGYM_LLM_BASE_URL`` (or ``OPENAI_BASE_URL``): e.g. ``http://127.0.0.1:8000/v1``
- ``ROBUSTGYM_LLM_MODEL`` (or ``OPENAI_MODEL``)
- ``ROBUSTGYM_LLM_API_KEY`` (or ``OPENAI_API_KEY``): optional for local servers

Only the standard library is used for HTTP, so no client package is needed.
"""

import http.client
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pipeline.task_model import Task
from robustgym.agents.base import Plan, Privilege, register_agent
from robustgym.env import Env, TaskObservation

NUDGE = "Use the tools to check the record, then finish with submit(status, answer)."
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class EndpointError(RuntimeError):
    """The chat endpoint failed or answered something that is not a chat completion."""


@dataclass(frozen=True)
class EndpointConfig:
    base_url: str
    model: str
    api_key: str | None = None
    timeout_s: float = 120.0
    temperature: float = 0.0
    max_turns: int = 30
    # further attempts after a 408/409/429/5xx, a timeout, a dropped connection or a body that is not JSON
    retries: int = 3
    backoff_s: float = 0.5  # wait before retry i: backoff_s * 2**i, or the server's Retry-After (at most max_backoff_s)
    max_backoff_s: float = 30.0

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> "EndpointConfig":
        environ = os.environ if environ is None else environ

        def first(*names: str) -> str | None:
            return next((environ[n] for n in names if environ.get(n)), None)

        values = {"base_url": first("ROBUSTGYM_LLM_BASE_URL", "OPENAI_BASE_URL"),
                  "model": first("ROBUSTGYM_LLM_MODEL", "OPENAI_MODEL"),
                  "api_key": first("ROBUSTGYM_LLM_API_KEY", "OPENAI_API_KEY")}
        values.update({k: v for k, v in overrides.items() if v is not None})
        missing = [n for n, var in (("base_url", "ROBUSTGYM_LLM_BASE_URL"), ("model", "ROBUSTGYM_LLM_MODEL"))
                   if not values.get(n)]
        if missing:
            raise ValueError("the OpenAI-compatible agent needs " + " and ".join(
                f"{n} (set {'ROBUSTGYM_LLM_BASE_URL' if n == 'base_url' else 'ROBUSTGYM_LLM_MODEL'})"
                for n in missing))
        return cls(**values)


class OpenAICompatAgent:
    name = "openai"
    privilege = Privilege.NONE

    def __init__(self, config: EndpointConfig | None = None, **overrides: Any):
        self.config = config or EndpointConfig.from_environment(**overrides)

    def run(self, env: Env, observation: TaskObservation, hint: Plan | Task | None, *, seed: int) -> None:
        messages: list[dict[str, Any]] = [{"role": "system", "content": observation.system},
                                          {"role": "user", "content": observation.prompt}]
        for _ in range(self.config.max_turns):
            message = self.chat(messages, observation.tools, seed)
            calls = message.get("tool_calls") or []
            messages.append({"role": "assistant", "content": message.get("content"),
                             **({"tool_calls": calls} if calls else {})})
            if not calls:
                messages.append({"role": "user", "content": NUDGE})
                continue
            for call in calls:
                function = call.get("function") or {}
                raw = function.get("arguments") or "{}"
                try:
                    arguments = json.loads(raw) if isinstance(raw, str) else raw
                except json.JSONDecodeError:
                    arguments = raw  # the environment answers with a bad_arguments error the model can read
                result = env.call(str(function.get("name")), arguments)
                messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": result.content})
                if env.done:
                    return

    def chat(self, messages: list[dict[str, Any]], tools: list[dict], seed: int) -> dict[str, Any]:
        body = {"model": self.config.model, "messages": messages, "tools": tools, "tool_choice": "auto",
                "temperature": self.config.temperature, "seed": seed}
        reply = self._post("/chat/completions", body)
        try:
            return reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise EndpointError(f"not a chat completion: {json.dumps(reply)[:300]}") from None

    def _post(self, path: str, body: dict) -> dict:
        url = self.config.base_url.rstrip("/") + path
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        data = json.dumps(body).encode()
        problem = "no answer"
        for attempt in range(self.config.retries + 1):
            wait = self.config.backoff_s * 2 ** attempt
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.config.timeout_s) as response:
                    raw = response.read()
                try:
                    return json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # a cut or garbled body: ask again
                    problem = f"answered with something that is not JSON ({exc}): {raw[:200]!r}"
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:300].decode("utf-8", "replace")
                problem = f"answered HTTP {exc.code}: {detail}"
                if exc.code not in RETRY_STATUS:
                    raise EndpointError(f"{url} {problem}") from None
                wait = _retry_after(exc.headers.get("Retry-After"), wait)
            except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as exc:
                problem = f"unreachable or too slow (timeout {self.config.timeout_s:g} s): {exc}"
            if attempt < self.config.retries:
                time.sleep(min(wait, self.config.max_backoff_s))
        raise EndpointError(f"{url} {problem} (after {self.config.retries + 1} attempts)")


def _retry_after(header: str | None, default: float) -> float:
    """Seconds a 429/503 asks us to wait (``Retry-After: <seconds>``), else ``default``."""
    try:
        return max(float(header), 0.0) if header is not None else default
    except ValueError:
        return default  # an HTTP date: rare for APIs; keep our own backoff


register_agent("openai")(OpenAICompatAgent)

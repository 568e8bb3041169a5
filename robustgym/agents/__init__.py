"""Agents that play episodes, registered by name (``make_agent``). Importing this package
registers the reference agents and the OpenAI-compatible adapter."""

from robustgym.agents import checking, floors, naive, openai_compat, oracle  # noqa: F401 - registration
from robustgym.agents.base import (Agent, CleanAnswer, DuplicateAgentError, Hint, Plan, Privilege, agent_names,
                                   hint_for, make_agent, register_agent, submission_value)

__all__ = ["Agent", "CleanAnswer", "DuplicateAgentError", "Hint", "Plan", "Privilege", "agent_names", "hint_for",
           "make_agent", "register_agent", "submission_value"]

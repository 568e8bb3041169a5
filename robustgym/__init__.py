"""EHR-RobustGym for downstream teams: ``load_release(path)`` and ``Env`` (see robustgym/env.py).

The names are resolved on first use so that ``robustgym --help`` and the other CLI commands do
not pay for importing DuckDB and the environment.
"""

__all__ = ["Env", "Limits", "Release", "load_release"]

_EXPORTS = {"Env": "robustgym.env", "Limits": "robustgym.env", "Release": "robustgym.release",
            "load_release": "robustgym.release"}


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'robustgym' has no attribute {name!r}")

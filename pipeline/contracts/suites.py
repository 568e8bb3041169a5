"""The expectation suites in ``data_contracts/``: where they live, how they are read and written.

A suite is a Great Expectations 1.x suite as JSON (``name``, ``expectations``, ``meta``, ``notes``),
one file per contract. What this project adds lives in ``meta`` and is checked on load, so a typo
in a suite fails loudly instead of silently weakening a contract:

- suite ``meta.frames``: the frames the contract is evaluated on (``pipeline.contracts.frames``
  computes them), each with its ``index`` column (named in the evidence of a failure) and a
  description. Cross-row rules that Great Expectations cannot express on one table (a twin without
  its clean task, a patient in two splits) are expectations over such derived frames, so every rule
  still lives in the JSON.
- suite ``meta.parameters``: names of run-time values (``{"$PARAMETER": name}`` in kwargs), e.g. the
  set of clean task ids a twin must point into.
- expectation ``meta.severity`` (``critical`` blocks, ``warning`` reports), ``meta.frame`` and
  ``meta.rule`` (what it guards against, in words). The top-level ``severity`` Great Expectations
  itself keeps must agree with ``meta.severity``.
"""

import json
from pathlib import Path

from pipeline.contracts.results import Severity

CONTRACTS_DIR = Path(__file__).resolve().parents[2] / "data_contracts"


def suite_path(name: str, contracts_dir: Path | None = None) -> Path:
    """``clean_tasks`` -> data_contracts/clean_tasks.json,
    ``source/patients`` -> data_contracts/source/patients.json."""
    return (contracts_dir or CONTRACTS_DIR) / f"{name}.json"


def dump_suite(suite: dict) -> str:
    """The canonical text of a suite file: stable key order as given, two-space indent, final newline."""
    return json.dumps(suite, indent=2, ensure_ascii=False) + "\n"


def check_suite(suite: dict, where: str) -> dict:
    """Raise ValueError naming ``where`` and the expectation if the suite's project metadata is wrong."""
    for key in ("name", "expectations", "meta"):
        if key not in suite:
            raise ValueError(f"{where}: suite has no {key!r}")
    frames = suite["meta"].get("frames")
    if not isinstance(frames, dict) or not frames:
        raise ValueError(f"{where}: suite meta.frames must name the frames the contract runs on")
    parameters = set(suite["meta"].get("parameters", {}))
    severities = {s.value for s in Severity}
    for i, exp in enumerate(suite["expectations"]):
        at = f"{where}: expectation {i} ({exp.get('type')})"
        meta = exp.get("meta") or {}
        if meta.get("severity") not in severities:
            raise ValueError(f"{at}: meta.severity must be one of {sorted(severities)}, got {meta.get('severity')!r}")
        if exp.get("severity", meta["severity"]) != meta["severity"]:
            raise ValueError(f"{at}: severity {exp['severity']!r} disagrees with meta.severity {meta['severity']!r}")
        if meta.get("frame") not in frames:
            raise ValueError(f"{at}: meta.frame {meta.get('frame')!r} is not one of the suite's frames "
                             f"{sorted(frames)}")
        if not meta.get("rule"):
            raise ValueError(f"{at}: meta.rule must say what the expectation guards against")
        for value in exp.get("kwargs", {}).values():
            if isinstance(value, dict) and "$PARAMETER" in value and value["$PARAMETER"] not in parameters:
                raise ValueError(f"{at}: parameter {value['$PARAMETER']!r} is not declared in meta.parameters")
    return suite


def load_suite(name: str, contracts_dir: Path | None = None) -> dict:
    path = suite_path(name, contracts_dir)
    try:
        suite = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"no expectation suite for contract {name!r}: {path} does not exist") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    return check_suite(suite, str(path))


def expectation(type_: str, severity: Severity, frame: str, rule: str, **kwargs) -> dict:
    """One expectation entry as it appears in a suite file."""
    return {"type": type_, "kwargs": kwargs, "severity": severity.value,
            "meta": {"severity": severity.value, "frame": frame, "rule": rule}}

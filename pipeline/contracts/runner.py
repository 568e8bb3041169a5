"""Run a contract's suite on its frames with Great Expectations and collect per-expectation evidence.

Frames arrive as pyarrow tables or polars frames and reach Great Expectations through
``.to_pandas()`` with Arrow-backed dtypes, so integer columns with nulls stay integers and the
offending values in the evidence are the values that were written. Great Expectations is imported
here, lazily: importing it costs seconds and the rest of the pipeline never needs it.
"""

import functools
import json
import math
from collections.abc import Mapping

from pipeline.contracts.expectation_memo import configurations_built_once
from pipeline.contracts.results import MAX_EXAMPLES, ContractResult, ExpectationResult, Severity
from pipeline.contracts.suites import check_suite, load_suite


def prepare() -> None:
    """Import Great Expectations and make its context now (about 2.5 s), e.g. on a
    ``pipeline.background.BackgroundCall`` while a step loads data, so its checks do not wait for it."""
    _batch_definition()


@functools.cache
def _batch_definition():
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    # Progress bars per metric would flood a Dagster run log and the CLI.
    context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
    asset = context.data_sources.add_pandas("robustgym_frames").add_dataframe_asset("frame")
    return asset.add_batch_definition_whole_dataframe("whole_frame")


def to_pandas(frame):
    """A pyarrow table or polars frame as pandas with Arrow dtypes (exact types, nullable ints)."""
    import pandas as pd

    if hasattr(frame, "to_arrow"):  # polars
        frame = frame.to_arrow()
    if hasattr(frame, "to_pandas") and hasattr(frame, "schema"):  # pyarrow
        return frame.to_pandas(types_mapper=pd.ArrowDtype)
    if isinstance(frame, pd.DataFrame):
        return frame
    raise TypeError(f"cannot validate a {type(frame).__name__}: expected a pyarrow Table or polars DataFrame")


def _plain(value):
    """JSON-friendly scalar for evidence (numpy and pandas scalars, NaN as None)."""
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        try:
            value = value.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _column_of(kwargs: dict) -> str | None:
    if "column" in kwargs:
        return kwargs["column"]
    if "column_A" in kwargs:
        return f"{kwargs['column_A']}, {kwargs['column_B']}"
    if "column_list" in kwargs:
        return ", ".join(kwargs["column_list"])
    return None


def _error_of(exception_info) -> str | None:
    if not exception_info:
        return None
    if "raised_exception" in exception_info:
        return exception_info["exception_message"] if exception_info["raised_exception"] else None
    messages = sorted({info["exception_message"] for info in exception_info.values()
                       if isinstance(info, dict) and info.get("raised_exception")})
    return "; ".join(messages) or None


def _examples(result: dict) -> tuple[tuple[dict, ...], int | None]:
    if "partial_missing_list" in result:
        return tuple({"missing": _plain(v)} for v in result["partial_missing_list"][:MAX_EXAMPLES]), \
            result.get("missing_count")
    if result.get("partial_unexpected_index_list"):
        return tuple({k: _plain(v) for k, v in row.items()}
                     for row in result["partial_unexpected_index_list"][:MAX_EXAMPLES]), result.get("unexpected_count")
    if result.get("partial_unexpected_list"):
        return tuple({"value": _plain(v)} for v in result["partial_unexpected_list"][:MAX_EXAMPLES]), \
            result.get("unexpected_count")
    return (), result.get("unexpected_count")


def _error_result(contract: str, exp: dict, message: str) -> ExpectationResult:
    meta = exp["meta"]
    return ExpectationResult(contract, meta["frame"], exp["type"], _column_of(exp.get("kwargs", {})),
                             Severity(meta["severity"]), meta["rule"], False, error=message)


def validate_frames(suite: dict | str, frames: Mapping[str, object],
                    parameters: Mapping[str, object] | None = None, *, screen: bool = True) -> ContractResult:
    """Evaluate every expectation of ``suite`` on the frame its ``meta.frame`` names.

    A frame that is absent, or an expectation that cannot be evaluated (a column missing from the
    frame, say), yields a failed result with the error as evidence rather than an exception: one run
    reports every problem. ``screen=False`` runs every expectation in the COMPLETE result format at
    once (the same results, slower: what the screening is measured and tested against).
    """
    suite = load_suite(suite) if isinstance(suite, str) else check_suite(suite, f"suite {suite.get('name')!r}")
    contract = suite["name"]
    declared = suite["meta"]["frames"]
    parameters = dict(parameters or {})
    missing_params = sorted(set(suite["meta"].get("parameters", {})) - set(parameters))
    if missing_params:
        raise ValueError(f"contract {contract!r} needs run-time parameters {missing_params}")

    by_frame: dict[str, list[tuple[int, dict]]] = {}
    for position, exp in enumerate(suite["expectations"]):
        by_frame.setdefault(exp["meta"]["frame"], []).append((position, exp))

    results: dict[int, ExpectationResult] = {}
    for frame_name, entries in by_frame.items():
        if frames.get(frame_name) is None:
            for position, exp in entries:
                results[position] = _error_result(contract, exp, f"frame {frame_name!r} was not computed")
            continue
        df = to_pandas(frames[frame_name])
        index = declared[frame_name].get("index")
        complete = {"result_format": "COMPLETE", "partial_unexpected_count": MAX_EXAMPLES}
        if index and index in df.columns:
            complete["unexpected_index_column_names"] = [index]
        # Great Expectations spends about half its time per expectation on the COMPLETE format's
        # unexpected-row lists, which only a failure shows. A BASIC pass screens every expectation;
        # what fails it (or raises) is run again in COMPLETE for its evidence.
        screened = _run_suite(f"{contract}.{frame_name}", entries, df, _BASIC if screen else complete, parameters)
        again = [(p, e) for p, e in entries if screen and not _passed(screened[p])]
        if again:
            screened.update(_run_suite(f"{contract}.{frame_name}", again, df, complete, parameters))
        for position, d in screened.items():
            results[position] = _result(contract, frame_name, suite["expectations"][position], d)
    return ContractResult(contract, tuple(results[p] for p in sorted(results)))


_BASIC = {"result_format": "BASIC", "partial_unexpected_count": MAX_EXAMPLES}


def _run_suite(name: str, entries: list[tuple[int, dict]], df, result_format: dict,
               parameters: Mapping[str, object]) -> dict[int, dict]:
    """Position in the suite -> Great Expectations' result of that expectation on ``df``, as JSON."""
    from great_expectations.core.expectation_suite import ExpectationSuite

    configs = [{"type": exp["type"], "kwargs": exp["kwargs"], "meta": {**exp["meta"], "position": position},
                "severity": exp["meta"]["severity"]} for position, exp in entries]
    batch = _batch_definition().get_batch(batch_parameters={"dataframe": df})
    with configurations_built_once():
        run = batch.validate(ExpectationSuite(name=name, expectations=configs), result_format=result_format,
                             expectation_parameters=dict(parameters))
    out = {}
    for r in run.results:
        d = r.to_json_dict()
        out[d["expectation_config"]["meta"]["position"]] = d
    return out


def _passed(d: dict) -> bool:
    return bool(d["success"]) and _error_of(d.get("exception_info")) is None


def _result(contract: str, frame_name: str, exp: dict, d: dict) -> ExpectationResult:
    res = d.get("result") or {}
    examples, unexpected = _examples(res)
    observed = res.get("observed_value")
    error = _error_of(d.get("exception_info"))
    return ExpectationResult(
        contract=contract, frame=frame_name, expectation=exp["type"], column=_column_of(exp["kwargs"]),
        severity=Severity(exp["meta"]["severity"]), rule=exp["meta"]["rule"],
        success=bool(d["success"]) and error is None,
        unexpected_count=unexpected, examples=examples,
        observed=None if observed is None else json.dumps(_plain(observed), default=str), error=error)

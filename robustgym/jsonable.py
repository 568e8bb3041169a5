"""Values made JSON-safe the same way wherever they leave the process (pipes, trajectories)."""

import math
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any


def to_json(value: Any) -> Any:
    """Timestamps become ISO text, decimals floats, durations seconds; anything unknown its ``str``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return str(value)

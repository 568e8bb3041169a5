"""Values made JSON-safe the same way wherever they leave the process (pipes, trajectories)."""

import math
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any


# Python refuses to turn an integer of more than 4,300 digits into text (so into JSON); such a value
# (an agent's submission, say) is described instead of written.
_MAX_INT_BITS = 14_000


def to_json(value: Any) -> Any:
    """Timestamps become ISO text, decimals floats, durations seconds; anything unknown its ``str``;
    an integer too long to write as JSON a short description of it."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _MAX_INT_BITS:
        return f"<an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits>"
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return float(value) if not value.is_snan() else str(value)
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

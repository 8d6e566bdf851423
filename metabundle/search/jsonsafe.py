"""Turn DuckDB values into JSON values, drop null fields, and bound the size of a payload."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
import uuid
from typing import Any

from metabundle.search.errors import RESULT_TOO_LARGE, ToolError

MAX_PAYLOAD_BYTES = 2_000_000


def to_json_value(value: Any) -> Any:
    """A JSON-compatible form of a value DuckDB returns."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_json_value(v) for v in value]
    if hasattr(value, "tolist"):
        return to_json_value(value.tolist())
    return str(value)


def without_nulls(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` without its null fields: an absent field reads as unknown, and a
    status field beside it says why (e.g. a provenance block's ``stats_file_status``)."""
    return {key: value for key, value in block.items() if value is not None}


def check_size(payload: dict[str, Any], hint: str) -> dict[str, Any]:
    """``payload`` if its JSON fits the cap, else ``result_too_large`` with ``hint``."""
    size = len(json.dumps(payload, default=str))
    if size > MAX_PAYLOAD_BYTES:
        raise ToolError(
            RESULT_TOO_LARGE,
            f"The result is {size:,} bytes, over the {MAX_PAYLOAD_BYTES:,}-byte cap; {hint}.",
        )
    return payload

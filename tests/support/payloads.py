"""Walking a tool's JSON payload."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def json_objects(value: Any) -> Iterator[dict[str, Any]]:
    """Every object inside ``value`` (itself included), depth first."""
    if isinstance(value, dict):
        yield value
        for child in value.values():
            yield from json_objects(child)
    elif isinstance(value, list):
        for child in value:
            yield from json_objects(child)

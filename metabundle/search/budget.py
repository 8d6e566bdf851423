"""The payload budget: how much of an agent's context window the tools may use.

- ``tools/list`` (every tool's name, description and input schema): at most
  :data:`TOOLS_LIST_MAX_BYTES`; long guidance lives in the MCP tool guide resource.
- A search tool's default answer (10 hits): at most :data:`SEARCH_ANSWER_MAX_BYTES`.
- Any answer: at most :data:`PAYLOAD_MAX_BYTES`. :func:`fit_payload` enforces it for
  every tool: an answer over the cap keeps the longest prefix of its largest list that
  fits and says so in ``size_cap``, with ``next_offset`` for a tool that pages.

Sizes are bytes of compact UTF-8 JSON (:func:`payload_bytes`), as clients receive them.
"""

from __future__ import annotations

import json
from typing import Any

TOOLS_LIST_MAX_BYTES = 25_000
SEARCH_ANSWER_MAX_BYTES = 8_000
PAYLOAD_MAX_BYTES = 128_000
SIZE_CAP_KEY = "size_cap"


def payload_bytes(value: Any) -> int:
    """The size of ``value`` as compact UTF-8 JSON."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())


def _largest_list(value: Any, path: tuple[str | int, ...] = ()) -> tuple[int, tuple] | None:
    """The JSON size and path of the largest list (of two items or more) in ``value``."""
    best: tuple[int, tuple] | None = None
    if isinstance(value, list):
        if len(value) > 1:
            best = (payload_bytes(value), path)
        children = enumerate(value)
    elif isinstance(value, dict):
        children = value.items()
    else:
        return None
    for key, child in children:
        found = _largest_list(child, (*path, key))
        if found and (best is None or found[0] > best[0]):
            best = found
    return best


def _container(payload: dict[str, Any], path: tuple) -> Any:
    for key in path:
        payload = payload[key]
    return payload


def fit_payload(
    payload: dict[str, Any], offset: int | None, max_bytes: int = PAYLOAD_MAX_BYTES
) -> dict[str, Any]:
    """``payload`` if it fits ``max_bytes``; else its largest list cut to the longest
    prefix that fits, and a ``size_cap`` block naming the list, what was returned of
    it and where the next page starts (``next_offset``, for a tool with ``offset``)."""
    if payload_bytes(payload) <= max_bytes:
        return payload
    found = _largest_list(payload)
    if found is None:
        return payload
    _, path = found
    parent, key = _container(payload, path[:-1]), path[-1]
    items = parent[key]
    total = len(items)
    note = {
        "max_bytes": max_bytes,
        "list": ".".join(str(part) for part in path),
        "total": total,
        "returned": total,
        "next_offset": None if offset is None else offset + total,
        "hint": "Call again with offset=next_offset for the rest."
        if offset is not None
        else "Ask for fewer items or narrow the request for the rest.",
    }
    low, high = 0, total  # the longest prefix that fits lies in [low, high)
    while low < high:
        middle = (low + high + 1) // 2
        parent[key] = items[:middle]
        note["returned"] = middle
        if payload_bytes({**payload, SIZE_CAP_KEY: note}) <= max_bytes:
            low = middle
        else:
            high = middle - 1
    parent[key] = items[:low]
    note["returned"] = low
    if offset is not None:
        note["next_offset"] = offset + low
    return {**payload, SIZE_CAP_KEY: note}

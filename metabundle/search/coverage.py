"""Not-found answers that say whether the release could have held the entity: a
release whose coverage block (``manifest.json``) says part of a source was left out
cannot tell an agent that something does not exist upstream."""

from __future__ import annotations

from typing import Any

from metabundle.search.errors import ToolError, not_found
from metabundle.search.release import Release

NOT_LISTED = "not_listed_upstream"
NOT_IN_RELEASE = "not_in_release"
RELEASE_PARTIAL = "release_partial"


def left_out(release: Release, source: str) -> list[dict[str, Any]]:
    """What the release's coverage block says ``source`` lacks (empty when complete or
    when the release records no coverage)."""
    coverage = release.manifest.get("coverage") or {}
    return list(((coverage.get("sources") or {}).get(source) or {}).get("left_out") or [])


def missing(release: Release, source: str, message: str, **details: Any) -> ToolError:
    """``not_found`` with ``message``; when ``source`` is partial in this release, the
    message and ``details`` add that the entity may exist upstream and how to add it."""
    gaps = left_out(release, source)
    if not gaps:
        return not_found(message, reason=NOT_LISTED, **details)
    remedy = gaps[0]["remedy"]
    return not_found(
        f"{message} This release lacks {gaps[0]['what']}; to add it: {remedy}.",
        reason=RELEASE_PARTIAL,
        remedy=remedy,
        **details,
    )

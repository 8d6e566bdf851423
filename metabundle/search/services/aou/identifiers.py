"""An All of Us item named by an identifier an agent has: an OMOP concept id, a
concept code, a survey question code, ``vocabulary:code`` or an alias
(``aou_item_identifier``), rather than the opaque result id.

One identifier can name several items (a shared answer concept such as "Skip" names
hundreds); the item chosen is the first by kind (a question or EHR concept before
navigation items, answers last), and the others are listed as alternatives.
"""

from __future__ import annotations

from typing import Any

from metabundle.search.errors import not_found
from metabundle.search.release import Release

MAX_ALTERNATIVES = 10
KIND_ORDER = (
    "question",
    "ehr_concept",
    "physical_measurement",
    "survey_topic",
    "survey_module",
    "domain",
    "answer",
)
MATCHES_SQL = f"""
SELECT a.result_id, a.kind, a.title, any_value(i.identifier_kind) AS identifier_kind
FROM aou_item_identifier i JOIN aou_item a USING (result_id)
WHERE i.normalized = ?
GROUP BY a.result_id, a.kind, a.title
ORDER BY coalesce(list_position({list(KIND_ORDER)!r}, a.kind), 99), a.result_id
"""


def resolve_identifier(release: Release, identifier: str) -> tuple[str, dict[str, Any]]:
    """The result id of the item ``identifier`` names and how it was resolved;
    ``not_found`` when no item has that identifier."""
    text = identifier.strip().lower()
    rows = release.query_dicts(MATCHES_SQL, [text])
    if not rows:
        raise not_found(
            f"No All of Us item in release {release.version} has the result id, concept "
            f"id, concept code or question code {identifier.strip()[:80]!r}; call "
            "search_aou_catalog to find one."
        )
    others = rows[1:]
    return rows[0]["result_id"], {
        "identifier": identifier.strip(),
        "matched_by": rows[0]["identifier_kind"],
        "items_matched": len(rows),
        "alternatives": [
            {k: row[k] for k in ("result_id", "kind", "title")} for row in others[:MAX_ALTERNATIVES]
        ],
        "alternatives_truncated": len(others) > MAX_ALTERNATIVES,
    }

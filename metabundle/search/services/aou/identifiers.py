"""An All of Us item named by an identifier an agent has: an OMOP concept id, a
concept code, a survey question code, ``vocabulary:code`` or an alias
(``aou_item_identifier``), rather than the opaque result id.

One identifier can name several items (a shared answer concept such as "Skip" names
hundreds); the item chosen is the first by kind (a question or EHR concept before
navigation items, answers last: :data:`.queries.KIND_ORDER`), and the others are listed
as alternatives.
"""

from __future__ import annotations

from metabundle.search.errors import not_found
from metabundle.search.release import Release
from metabundle.search.services.aou.models import IdentifierResolution, ItemAlternative
from metabundle.search.services.aou.queries import identifier_matches

MAX_ALTERNATIVES = 10


def resolve_identifier(release: Release, identifier: str) -> tuple[str, IdentifierResolution]:
    """The result id of the item ``identifier`` names and how it was resolved;
    ``not_found`` when no item has that identifier."""
    rows = identifier_matches(release, identifier.strip().lower())
    if not rows:
        raise not_found(
            f"No All of Us item in release {release.version} has the result id, concept "
            f"id, concept code or question code {identifier.strip()[:80]!r}; call "
            "search_aou_catalog to find one."
        )
    others = rows[1:]
    return rows[0]["result_id"], IdentifierResolution(
        identifier=identifier.strip(),
        matched_by=rows[0]["identifier_kind"],
        items_matched=len(rows),
        alternatives=[
            ItemAlternative(result_id=row["result_id"], kind=row["kind"], title=row["title"])
            for row in others[:MAX_ALTERNATIVES]
        ],
        alternatives_truncated=len(others) > MAX_ALTERNATIVES,
    )

"""What a UK Biobank release holds of the Showcase: fields, categories with titles,
and the codings whose values were read."""

from __future__ import annotations

from typing import Any

from metabundle.sources.base import CoverageContext, coverage_block, left_out

PUBLIC_SHOWCASE = (
    "build from the public Showcase (no --upstream), or refresh the mirror with "
    "`metabundle mirror --to DIR --sources ukb` and rebuild from it"
)


def coverage(ctx: CoverageContext) -> dict[str, Any]:
    """Every field of schema 1; codings and category titles as far as upstream had them."""
    details = ctx.snapshot.details
    referenced = int(details.get("codings_referenced", 0))
    missing = int(details.get("codings_missing", 0))
    counts = {
        "fields": ctx.count("SELECT count(*) FROM ukb_field"),
        "fields_with_participants": ctx.count(
            "SELECT count(*) FROM ukb_field WHERE num_participants > 0"
        ),
        "categories": ctx.count("SELECT count(*) FROM ukb_category"),
        "categories_with_titles": ctx.count(
            "SELECT count(*) FROM ukb_category WHERE title IS NOT NULL"
        ),
        "codings": ctx.count("SELECT count(*) FROM ukb_encoding"),
        "codings_referenced": referenced,
        "codings_with_values": ctx.count("SELECT count(*) FROM ukb_encoding WHERE values_loaded"),
        "coding_values": ctx.count("SELECT count(*) FROM ukb_encoding_value"),
    }
    gaps = []
    notes = [f"Category titles come from {details.get('category_titles', 'unknown')}."]
    from_mirror = "mirror" in str(details.get("codings_discovery", ""))
    if missing and from_mirror:
        gaps.append(
            left_out(
                f"values of {missing:,} of the {referenced:,} codings the fields use: the "
                "mirror holds no coding file for them",
                PUBLIC_SHOWCASE,
                missing,
            )
        )
    elif missing:
        notes.append(f"The Showcase returned no values for {missing:,} referenced codings.")
    untitled = counts["categories"] - counts["categories_with_titles"]
    if untitled and details.get("schema_3") != "fetched":
        gaps.append(
            left_out(
                f"titles of {untitled:,} categories: Showcase schema 3 was not available",
                PUBLIC_SHOWCASE,
                untitled,
            )
        )
    summary = (
        f"every field of Showcase schema 1 ({counts['fields']:,}); values of "
        f"{counts['codings_with_values']:,} of {referenced:,} referenced codings"
    )
    return coverage_block(
        selection="all", summary=summary, counts=counts, left_out=gaps, notes=notes
    )

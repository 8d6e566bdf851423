"""What an OMOP release holds: the vocabulary exports it read (a full Athena export
or public subsets), and its concepts by vocabulary."""

from __future__ import annotations

from typing import Any

from metabundle.sources.base import CoverageContext, coverage_block, left_out
from metabundle.sources.omop.exports import ATHENA_REMEDY

ATHENA_EXPORT = "athena_export"
PUBLIC_SUBSETS = "public_subsets"


def coverage(ctx: CoverageContext) -> dict[str, Any]:
    """Concepts by vocabulary; the full vocabularies are left out unless an Athena
    export was given."""
    details = ctx.snapshot.details
    kind = details.get("vocabulary", PUBLIC_SUBSETS)
    exports = [export["name"] for export in details.get("exports", [])]
    counts = {
        "concepts": ctx.count("SELECT count(*) FROM omop_concept"),
        "standard_concepts": ctx.count(
            "SELECT count(*) FROM omop_concept WHERE standard_concept = 'S'"
        ),
        "synonyms": ctx.count("SELECT count(*) FROM omop_concept_synonym"),
        "relationships": ctx.count("SELECT count(*) FROM omop_concept_relationship"),
        "ancestor_rows": ctx.count("SELECT count(*) FROM omop_concept_ancestor"),
        "concepts_by_vocabulary": ctx.counts_by(
            "SELECT vocabulary_id, count(*) FROM omop_concept GROUP BY 1 ORDER BY 2 DESC, 1"
        ),
    }
    gaps = []
    if kind == PUBLIC_SUBSETS:
        gaps.append(
            left_out(
                "the full OMOP vocabularies: this release holds public vocabulary subsets "
                f"({', '.join(exports)}), so a code or concept missing here may well exist",
                ATHENA_REMEDY,
            )
        )
    held = "an Athena export" if kind == ATHENA_EXPORT else "public vocabulary subsets"
    summary = (
        f"{held} ({', '.join(exports)}): {counts['concepts']:,} concepts in "
        f"{len(counts['concepts_by_vocabulary'])} vocabularies"
    )
    return coverage_block(selection=kind, summary=summary, counts=counts, left_out=gaps)

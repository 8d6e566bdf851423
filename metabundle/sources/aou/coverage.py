"""What an All of Us release holds of the public Data Browser: every survey module,
question and answer, physical measurement and EHR concept, and whether participant
counts were read."""

from __future__ import annotations

from typing import Any

from metabundle.sources.aou.api import FROM_API
from metabundle.sources.base import CoverageContext, coverage_block, left_out

COUNTS_REMEDY = (
    "rebuild on a machine that reaches the Data Browser API "
    "(https://databrowser.researchallofus.org/api), without --upstream"
)


def coverage(ctx: CoverageContext) -> dict[str, Any]:
    """Items by kind, and the participant counts' status."""
    by_kind = ctx.counts_by("SELECT kind, count(*) FROM aou_item GROUP BY kind ORDER BY kind")
    counted = ctx.count("SELECT count(*) FROM aou_item WHERE participant_count IS NOT NULL")
    api = ctx.snapshot.details.get("api", {})
    gaps = []
    if api.get("status") != FROM_API:
        gaps.append(
            left_out(
                "participant counts per item: the Data Browser API was not read "
                f"({api.get('status', 'unknown')})",
                COUNTS_REMEDY,
            )
        )
    total = sum(by_kind.values())
    summary = (
        f"every survey module, question and answer of the Data Browser catalogue "
        f"({by_kind.get('question', 0):,} questions, {by_kind.get('answer', 0):,} answers) "
        f"and {by_kind.get('ehr_concept', 0):,} EHR concepts; {total:,} items"
    )
    notes = [
        "EHR concepts are those of the OMOP vocabulary this release holds (see omop's coverage)."
    ]
    return coverage_block(
        selection="all",
        summary=summary,
        counts={"items": total, "items_with_participant_counts": counted, "by_kind": by_kind},
        left_out=gaps,
        notes=notes,
    )

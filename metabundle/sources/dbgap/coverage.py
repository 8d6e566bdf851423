"""What a dbGaP release holds of what dbGaP lists: studies built and left out,
variables, datasets, variable reports and documents."""

from __future__ import annotations

from typing import Any

from metabundle.sources.base import CoverageContext, coverage_block, left_out

EVERY_STUDY = (
    "rebuild without --dbgap-studies and --profile dev to build every study, or name "
    "the studies with --dbgap-studies"
)
"""How a build adds the studies a selection left out."""

STUDY_COUNTS = """
SELECT count(DISTINCT study_base),
       count(*),
       count(DISTINCT study_base) FILTER (WHERE has_variables),
       count(DISTINCT study_base) FILTER (WHERE synthetic)
FROM dbgap_study
"""


def coverage(ctx: CoverageContext) -> dict[str, Any]:
    """Studies built (with and without variables) against studies dbGaP lists."""
    built, versions, with_variables, synthetic = ctx.row(STUDY_COUNTS)
    unbuilt = ctx.count("SELECT count(*) FROM dbgap_unbuilt_study")
    listed = built + unbuilt
    counts = {
        "studies_listed_upstream": listed,
        "studies": built,
        "study_versions": versions,
        "studies_with_variables": with_variables,
        "studies_without_variables": built - with_variables,
        "synthetic_studies": synthetic,
        "datasets": ctx.count("SELECT count(*) FROM dbgap_dataset"),
        "datasets_with_var_report": ctx.count(
            "SELECT count(*) FROM dbgap_dataset WHERE has_var_report"
        ),
        "variables": ctx.count("SELECT count(*) FROM dbgap_variable"),
        "documents": ctx.count("SELECT count(*) FROM dbgap_document"),
    }
    missing = []
    if unbuilt:
        missing.append(
            left_out(f"{unbuilt:,} of the {listed:,} studies dbGaP lists", EVERY_STUDY, unbuilt)
        )
    selection = ctx.snapshot.details.get("selection", "all")
    held = "every study" if not unbuilt else f"{built:,} of the {listed:,} studies"
    summary = (
        f"{held} dbGaP lists ({selection} selection): {counts['variables']:,} variables in "
        f"{with_variables:,} studies with data dictionaries"
    )
    if built > with_variables:
        summary += (
            f"; the other {built - with_variables:,} publish no data dictionary on the FTP "
            "tree read"
        )
    notes = ["Studies without variables are listed by name, description and study facts only."]
    if synthetic:
        notes.append(
            f"{synthetic} synthetic test studies are labelled synthetic and have no dbGaP URL."
        )
    return coverage_block(
        selection=ctx.snapshot.details.get("studies", "all"),
        summary=summary,
        counts=counts,
        left_out=missing,
        notes=notes,
    )

"""Per-source services: each module registers its tools with :mod:`..tools`.

``common`` holds the release-wide tools (release info, tables, guarded SQL, the
cross-source search); each source adds a module with its contract's tools.
"""

# Importing a module registers its tools.
from metabundle.search.services import (  # noqa: F401
    aou,
    common,
    dbgap,
    dbgap_across,
    dbgap_variable,
    idc,
    idc_citations,
    idc_clinical,
    idc_cohort,
    idc_indices,
    idc_urls,
    omop,
    omop_concept_set,
    omop_crosswalk,
    omop_graph,
    ukb,
)

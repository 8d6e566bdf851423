"""One representative call of every tool: the answer an agent gets with the defaults.

The payload-budget tests and the token benchmark call each tool with these arguments
(identifiers that every build of the mirror holds), so the size of a tool's usual
answer is measured for every registered tool. A new tool adds its call here; the
budget test fails for a tool that has none.
"""

from __future__ import annotations

from typing import Any

CT = {"Modality": ["CT"]}

EXAMPLE_CALLS: dict[str, dict[str, Any]] = {
    # release-wide
    "get_release_info": {},
    "list_tables": {},
    "get_table_schema": {"table": "dbgap_variable"},
    "run_sql": {"sql": "SELECT * FROM omop_concept ORDER BY concept_id"},
    "search_all": {"query": "body mass index"},
    # dbGaP
    "resolve_dbgap_study": {"query": "Jackson Heart Study"},
    "get_dbgap_study": {"study_id": "phs000286.v6.p2"},
    "search_dbgap_catalog": {"study_id": "phs000286.v6.p2", "query": "systolic blood pressure"},
    "get_dbgap_variable": {"variable_id": "phv00000002"},
    "find_variables_across_studies": {"query": "systolic blood pressure"},
    # UK Biobank
    "search_ukb_fields": {"query": "body mass index"},
    "get_ukb_field": {"field_id": 41270},
    # All of Us
    "search_aou_catalog": {"query": "blood pressure"},
    "get_aou_item": {"result_id": "CantAffordCare_DentalCare"},
    # OMOP
    "concept_search_exact": {"query": "K92.2"},
    "concept_search_fulltext": {"query": "gastrointestinal hemorrhage"},
    "concept_navigate_to_standard": {"concept_ids": [8481, 8485, 8486]},
    "concept_map_to_standard": {"vocabulary_id": "ICD10CM", "concept_code": "K92.2"},
    "embedding_search": {"query": "bleeding in the stomach"},
    "concept_ground": {"query": "type 2 diabetes"},
    "concept_get": {"concept_id": 201826},
    "concept_crosswalk": {"concept_id": 201826},
    "concept_set_resolve": {
        "expression": {"items": [{"concept": {"CONCEPT_ID": 201826}, "includeDescendants": True}]}
    },
    "concept_ancestors": {"concept_id": 4001336},
    "concept_descendants": {"concept_id": 4001336},
    "concept_relationships": {"concept_id": 201826},
    "concept_path": {"source_id": 35208414, "target_id": 192671},
    "concept_by_code": {"vocabulary_id": "ICD10CM", "concept_code": "K92.2"},
    "concept_nearest_standard_ancestor": {"concept_id": 35208414},
    "embedding_neighbours": {"concept_id": 201826},
    # IDC
    "get_idc_version": {},
    "get_stats": {},
    "list_collections": {},
    "get_collection": {"collection_id": "nlst"},
    "list_analysis_results": {},
    "search_idc": {"query": "lung cancer CT"},
    "list_attributes": {},
    "list_index_attributes": {"index": "seg_index"},
    "get_attribute_values": {"attribute": "BodyPartExamined", "filters": CT},
    "build_cohort": {"filters": CT},
    "get_citations": {"filters": CT},
    "get_licenses": {"filters": CT},
    "get_cohort_urls": {"filters": {"Modality": ["US"], "collection_id": ["cptac_pda"]}},
    "list_clinical_tables": {"collection_id": "nlst"},
    "get_clinical_table_schema": {"table": "nlst_prsn"},
    "get_clinical_values": {"table": "nlst_prsn", "filters": CT},
    "get_viewer_url": {
        "study_instance_uid": "1.3.6.1.4.1.14519.5.2.1.1078.3273.1078.3273.43383902521229616907",
        "series_instance_uid": "1.3.6.1.4.1.14519.5.2.1.1078.3273.1078.3273.33030494760673582600",
    },
}
"""Tool name → the arguments of its representative call."""

SEARCH_TOOLS = (
    "search_all",
    "search_dbgap_catalog",
    "search_ukb_fields",
    "search_aou_catalog",
    "search_idc",
    "concept_search_fulltext",
    "embedding_search",
    "concept_ground",
)
"""The search tools whose default answer (10 hits) is held to the search budget."""

"""The representative call of every tool (:data:`EXAMPLE_CALLS`) on the tests' builds.

Those builds hold a generated IDC clinical table (:data:`CLINICAL_TABLE`) in place of
the real ones the package's calls name, so the clinical tools' calls read it instead.
"""

from __future__ import annotations

from typing import Any

from metabundle.search.examples import EXAMPLE_CALLS
from tests.support.idc_generated import CLINICAL_TABLE

GENERATED_CLINICAL_CALLS: dict[str, dict[str, Any]] = {
    "list_clinical_tables": {},
    "get_clinical_table_schema": {"table": CLINICAL_TABLE},
    "get_clinical_values": {
        "table": CLINICAL_TABLE,
        "columns": ["stage", "survival_days"],
        "filters": {"Modality": ["CT"]},
    },
}

TEST_CALLS: dict[str, dict[str, Any]] = {**EXAMPLE_CALLS, **GENERATED_CLINICAL_CALLS}
"""Tool name → the arguments of its representative call on a test build."""

"""``get_dbgap_variable``: one dbGaP variable with its coded values and their labels.

A variable's coded values come from its data dictionary (``dbgap_variable_value``:
code → label, in dictionary order); where a variable report (var_report) was read,
each value also carries its count over all subjects (``dbgap_variable_value_count``,
consent group ``total``), and the summary statistics come with it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field

from metabundle.search.coverage import missing
from metabundle.search.errors import invalid
from metabundle.search.params import Params
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.dbgap.models import (
    CodedValue,
    CodedValues,
    StudySummary,
    VariableAnswer,
    VariableDataset,
    VariableRecord,
)
from metabundle.search.services.dbgap.queries import (
    dictionary_values,
    value_count_rows,
    variable_rows,
)
from metabundle.search.services.dbgap.stats import variable_stats
from metabundle.search.services.dbgap.studies import study_index

MAX_VALUES = 100
VARIABLE_ID_RE = re.compile(r"(?:phs\d{6}\.v\d+\.p\d+/)?phv\d{8}(?:\.v\d+(?:\.p\d+)?)?")


class VariableParams(Params):
    variable_id: Annotated[
        str,
        Field(
            max_length=100,
            description="An id from search_dbgap_catalog or a phv accession.",
        ),
    ]


def _column(text: str) -> str:
    """The column a variable id names, by its form."""
    if "/" in text:
        return "v.variable_id"
    if "." in text:
        return "v.variable_accession"
    return "v.variable_base"


def find_variable(release: Release, variable_id: str) -> tuple[dict[str, Any], list[str]]:
    """The variable ``variable_id`` names (the newest when an accession names several)
    and the ids of the others; ``invalid_request`` or ``not_found`` otherwise."""
    text = variable_id.strip().lower()
    if not VARIABLE_ID_RE.fullmatch(text):
        raise invalid(
            "get_dbgap_variable: variable_id must be a dbGaP variable id such as "
            f"phs000286.v7.p2/phv00124546.v4.p2 or phv00124546.v4.p2, not {variable_id[:80]!r}."
        )
    rows = variable_rows(release, _column(text), text)
    if not rows:
        raise missing(
            release,
            "dbgap",
            f"This release has no dbGaP variable {text}; find variables with search_dbgap_catalog.",
        )
    return rows[0], [row["variable_id"] for row in rows[1:]]


def coded_values(release: Release, variable_id: str) -> CodedValues:
    """The data dictionary's code → label values, each with its count over all
    subjects where the variable report gives one; codes only the report lists follow."""
    counts = {row["code"]: row for row in value_count_rows(release, [variable_id])}
    items = [
        CodedValue(
            code=row["code"],
            label=row["label"],
            is_replacement=row["is_replacement"],
            count=counts.pop(row["code"])["count"] if row["code"] in counts else None,
        )
        for row in dictionary_values(release, variable_id)
    ]
    items += [
        CodedValue(code=code, label=row["value"], is_replacement=False, count=row["count"])
        for code, row in counts.items()
    ]
    return CodedValues(
        total=len(items),
        items=items[:MAX_VALUES],
        truncated=len(items) > MAX_VALUES,
        tables=["dbgap_variable_value", "dbgap_variable_value_count"],
    )


@tool(
    "get_dbgap_variable",
    "Call with a search_dbgap_catalog id or phv accession for a variable's coded values.",
    VariableParams,
    "dbgap",
    response=VariableAnswer,
    guide=(
        "Get one dbGaP variable with its coded values and labels (with counts where "
        "reported) and its statistics. Call it with an id from search_dbgap_catalog (or a"
        " phv accession) to learn what a code means. "
        "The answer holds name, description, type, units, range and comment, its dataset and "
        "study, and each coded value's count over all subjects where dbGaP's variable report "
        "gives one. Cite canonical_url; a variable's documentation does not establish data "
        "access."
    ),
)
def get_dbgap_variable(release: Release, params: VariableParams) -> VariableAnswer:
    row, others = find_variable(release, params.variable_id)
    study = study_index(release).by_id[row["study_accession"]]
    synthetic = {"synthetic": True} if row["synthetic"] else {}
    return VariableAnswer(
        variable=VariableRecord(
            id=row["variable_id"],
            accession=row["variable_accession"],
            name=row["name"],
            description=row["description"],
            type=row["type"],
            units=row["units"],
            logical_min=row["logical_min"],
            logical_max=row["logical_max"],
            comment=row["comment"],
            collection_interval=row["collection_interval"],
            is_unique_key=row["is_unique_key"],
            coded_value_count=row["value_count"],
            has_stats=row["has_stats"],
            metadata_source=row["metadata_source"],
            **synthetic,
            canonical_url=row["canonical_url"],
        ),
        dataset=VariableDataset(
            dataset_id=row["dataset_id"],
            accession=row["dataset_accession"],
            name=row["dataset_name"],
            description=row["dataset_description"],
            canonical_url=row["dataset_url"],
        ),
        study=study.summary(StudySummary),
        values=coded_values(release, row["variable_id"]),
        stats=variable_stats(release, [row["variable_id"]])[row["variable_id"]],
        other_versions=others,
        canonical_url=row["canonical_url"],
    )

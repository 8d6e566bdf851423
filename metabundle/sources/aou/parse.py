"""The parse step: read the inputs, build every kind of item, write the tables."""

from __future__ import annotations

import pyarrow as pa

from metabundle.sources.aou import catalog
from metabundle.sources.aou.api import OFFLINE, check_openapi, read_counts
from metabundle.sources.aou.assemble import assemble
from metabundle.sources.aou.clinical import build_clinical, units
from metabundle.sources.aou.inputs import (
    ANSWER_KEY_SPEC,
    DATA_BROWSER_FILES,
    SURVEY_MODULE,
    empty,
    read_csv,
)
from metabundle.sources.aou.survey import build_survey
from metabundle.sources.base import ParseContext

OMOP_TABLES = ("omop_concept", "omop_concept_relationship")
API_COUNTS = """
CREATE OR REPLACE TEMP VIEW api_counts AS
SELECT a.kind, coalesce(d.domain_id, a.native_id) AS native_id, a.participant_count, a.endpoint
FROM api_answers a
LEFT JOIN in_domain d ON a.kind = 'domain' AND d.name = a.native_id
"""


def _register_inputs(ctx: ParseContext) -> None:
    """Expose the CSVs, the answer key, the fixed catalogues and the OMOP tables."""
    con = ctx.con
    tables = {spec.view: read_csv(ctx, spec) for spec in DATA_BROWSER_FILES}
    has_key = any(f.key == ANSWER_KEY_SPEC.key for f in ctx.snapshot.files)
    tables[ANSWER_KEY_SPEC.view] = (
        read_csv(ctx, ANSWER_KEY_SPEC) if has_key else empty(ANSWER_KEY_SPEC)
    )
    tables["module_pages"] = catalog.module_pages(tables[SURVEY_MODULE.view])
    tables["domain_pages"] = catalog.domain_pages()
    tables["pm_catalog"] = catalog.pm_catalog()
    for name, table in tables.items():
        con.register(name, table)
    for name in OMOP_TABLES:
        path = str(ctx.table_path(name)).replace("'", "''")
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM read_parquet('{path}')")


def _register_counts(ctx: ParseContext) -> str:
    """Register the API counts as ``api_counts`` (domains by id, as items are keyed);
    return the build's count status."""
    counts = read_counts(ctx.snapshot)
    ctx.con.register(
        "api_answers",
        pa.table(
            {
                "kind": pa.array([c.kind for c in counts], pa.string()),
                "native_id": pa.array([c.native_id for c in counts], pa.string()),
                "participant_count": pa.array([c.participant_count for c in counts], pa.int64()),
                "endpoint": pa.array([c.endpoint for c in counts], pa.string()),
            }
        ),
    )
    ctx.con.execute(API_COUNTS)
    status: str = ctx.snapshot.details.get("api", {}).get("status", OFFLINE)
    return status


def parse(ctx: ParseContext) -> None:
    """Write aou_item, aou_item_identifier, aou_item_edge, aou_item_link and aou_unit."""
    check_openapi(ctx.snapshot)
    _register_inputs(ctx)
    status = _register_counts(ctx)
    build_survey(ctx.con, ctx.report)
    build_clinical(ctx.con)
    for name, relation in assemble(ctx.con, status).items():
        ctx.write(name, relation)
    ctx.write("aou_unit", units(ctx.con))

"""Blocking asset checks generated from the schema registry.

Every table asset gets: primary-key uniqueness, no nulls in required columns, and
at least one row (unless the table allows being empty). They run on the staged
Parquet file; a failed check blocks everything downstream, so no release is written.
"""

from __future__ import annotations

from pathlib import Path

from dagster import AssetCheckResult, AssetCheckSpec

from metabundle.db import connect
from metabundle.schemas import duplicate_keys, get_table, quote_identifier

PRIMARY_KEY = "primary_key_unique"
NOT_NULL = "required_columns_not_null"
HAS_ROWS = "has_rows"


def check_specs(table_name: str) -> list[AssetCheckSpec]:
    """The checks the registry implies for ``table_name``."""
    table = get_table(table_name)
    specs = [
        AssetCheckSpec(
            PRIMARY_KEY,
            asset=table.name,
            blocking=True,
            description=f"No two rows share ({', '.join(table.primary_key)}).",
        ),
        AssetCheckSpec(
            NOT_NULL,
            asset=table.name,
            blocking=True,
            description="Columns declared NOT NULL hold no nulls.",
        ),
    ]
    if not table.allow_empty:
        specs.append(
            AssetCheckSpec(HAS_ROWS, asset=table.name, blocking=True, description="Rows > 0.")
        )
    return specs


def run_checks(table_name: str, parquet: Path) -> list[AssetCheckResult]:
    """Evaluate every check of ``table_name`` on its staged file."""
    table = get_table(table_name)
    source = f"read_parquet('{parquet}')"
    results = []
    with connect() as con:
        duplicates, examples = duplicate_keys(con, table, source)
        results.append(
            AssetCheckResult(
                asset_key=table.name,
                check_name=PRIMARY_KEY,
                passed=duplicates == 0,
                metadata={"duplicate_keys": duplicates, "examples": ", ".join(examples)},
            )
        )
        required = [c.name for c in table.columns if not c.nullable]
        counts = (
            con.sql(
                "SELECT "
                + ", ".join(f"count(*) - count({quote_identifier(c)})" for c in required)
                + f" FROM {source}"
            ).fetchall()[0]
            if required
            else ()
        )
        nulls = {c: int(n) for c, n in zip(required, counts, strict=True) if n}
        results.append(
            AssetCheckResult(
                asset_key=table.name,
                check_name=NOT_NULL,
                passed=not nulls,
                metadata={"null_counts": str(nulls) if nulls else "none"},
            )
        )
        if not table.allow_empty:
            rows = con.sql(f"SELECT count(*) FROM {source}").fetchall()[0][0]
            results.append(
                AssetCheckResult(
                    asset_key=table.name,
                    check_name=HAS_ROWS,
                    passed=rows > 0,
                    metadata={"rows": rows},
                )
            )
    return results

"""Summary statistics of dbGaP variables from their variable reports (var_report.xml):
all subjects, each consent group, and the value counts over all subjects."""

from __future__ import annotations

from typing import Any

from metabundle.search.release import Release
from metabundle.search.services.dbgap.models import (
    ConsentGroupStats,
    ConsentStats,
    NoStats,
    StatFigures,
    ValueCount,
    ValueCounts,
    VariableStats,
)
from metabundle.search.services.dbgap.queries import STAT_FIELDS, stat_rows, value_count_rows

MAX_CONSENT_GROUPS = 12
MAX_VALUES = 20
NO_REPORT = "no variable report (var_report.xml) was read for this variable"


def _stat(row: dict[str, Any]) -> dict[str, Any]:
    """The statistics a report gives for one group (absent ones left out)."""
    return {name: row[name] for name in STAT_FIELDS if row[name] is not None}


def variable_stats(release: Release, variable_ids: list[str]) -> dict[str, VariableStats | NoStats]:
    """Summary statistics of each variable from its variable report: all subjects,
    per consent group (capped) and the value counts for all subjects (capped)."""
    stats: dict[str, VariableStats | NoStats] = {
        vid: NoStats(available=False, status=NO_REPORT) for vid in variable_ids
    }
    if not variable_ids:
        return stats
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in stat_rows(release, variable_ids):
        groups.setdefault(row["variable_id"], []).append(row)
    values: dict[str, list[ValueCount]] = {}
    for row in value_count_rows(release, variable_ids):
        values.setdefault(row.pop("variable_id"), []).append(ValueCount(**row))
    for vid, rows in groups.items():
        total = next((r for r in rows if r["consent_group"] == "total"), None)
        consents = [
            ConsentStats(consent_group=r["consent_group"], **_stat(r))
            for r in rows
            if r["consent_group"] != "total"
        ]
        counted = values.get(vid, [])
        stats[vid] = VariableStats(
            available=True,
            source="var_report",
            tables=["dbgap_variable_stat", "dbgap_variable_value_count"],
            total=None if total is None else StatFigures(**_stat(total)),
            consent_groups=ConsentGroupStats(
                total=len(consents),
                items=consents[:MAX_CONSENT_GROUPS],
                truncated=len(consents) > MAX_CONSENT_GROUPS,
            ),
            values=ValueCounts(
                total=len(counted),
                items=counted[:MAX_VALUES],
                truncated=len(counted) > MAX_VALUES,
            ),
        )
    return stats

"""One ``dbgap_study`` row per study version in the export or on the FTP.

The Advanced Search export describes only each study's current version; the FTP
may hold older versions (often the only ones with data dictionaries). Every
version gets a row. Its text comes from the first source that has it:

1. the version's own GapExchange file (full description, designs, diseases,
   consent groups, publications);
2. the export's row, when the export's version is this one;
3. the export's row of the study's current version (``text_source`` is then
   ``current_version``: an older version described by today's text);
4. the study name of a variable report, else the accession itself.

Facts that belong to one version (release dates, content counts, markersets,
molecular data types, collections) are taken only from the export's own row.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from metabundle.sources.dbgap.accessions import (
    SYNTHETIC_STUDIES,
    StudySelector,
    StudyVersion,
    study_url,
)
from metabundle.sources.dbgap.rows import Row
from metabundle.sources.dbgap.studies_csv import acronyms

EXPORT_ONLY = (
    "markersets",
    "molecular_data_types",
    "content_counts",
    "reported_dataset_count",
    "reported_variable_count",
    "reported_subject_count",
    "reported_sample_count",
    "ancestry",
    "release_date",
    "embargo_release_date",
    "collections",
    "collection_accessions",
)
GAP_ONLY = ("pubmed_ids", "gap_create_date", "gap_mod_date")
LISTS = frozenset(
    {"markersets", "molecular_data_types", "collections", "collection_accessions", "pubmed_ids"}
)


def study_versions(
    export: dict[str, Row],
    selectors: tuple[StudySelector, ...] | None,
    on_ftp: Iterable[str],
) -> list[StudyVersion]:
    """Every selected version: the export's current ones and those on the FTP."""
    found = {StudyVersion.parse(accession) for accession in on_ftp}
    found |= {StudyVersion.parse(row["study_accession"]) for row in export.values()}
    return sorted(
        v
        for v in found
        if v is not None and (selectors is None or any(s.admits(v) for s in selectors))
    )


def study_rows(
    versions: list[StudyVersion],
    export: dict[str, Row],
    gap_exchange: dict[str, Row],
    on_ftp: set[str],
    report_names: dict[str, str],
) -> list[Row]:
    """The study rows of ``versions`` (without the counts, which come from the tables)."""
    newest_on_ftp: dict[str, StudyVersion] = {}
    for version in versions:
        if version.accession in on_ftp:
            newest_on_ftp[version.base] = version
    rows = []
    for version in versions:
        current_row = export.get(version.base)
        current = (
            current_row["study_accession"] if current_row else newest_on_ftp[version.base].accession
        )
        own_row = current_row if current == version.accession else None
        rows.append(
            _study_row(
                version,
                current,
                own_row,
                current_row,
                gap_exchange.get(version.accession),
                version.accession in on_ftp,
                report_names.get(version.accession),
            )
        )
    return rows


def _study_row(
    version: StudyVersion,
    current: str,
    export_row: Row | None,
    current_row: Row | None,
    gap_row: Row | None,
    on_ftp: bool,
    report_name: str | None,
) -> Row:
    described = [
        (label, row)
        for label, row in (
            ("gap_exchange", gap_row),
            ("advanced_search", export_row),
            ("current_version", current_row),
        )
        if row is not None and row.get("name")
    ]
    if described:
        text_source, text_row = described[0]
        name = text_row["name"]
    else:
        text_source = "var_report" if report_name else "accession"
        name, text_row = report_name or version.accession, {}
    sources = [row for _label, row in described]
    parent = _first(sources, "parent_study_accession")
    synthetic = version.base in SYNTHETIC_STUDIES and current_row is None
    row: Row = {
        "study_accession": version.accession,
        "study_base": version.base,
        "version": version.version,
        "participant_set": version.participant_set,
        "is_current_version": version.accession == current,
        "current_accession": current,
        "name": name,
        "description": text_row.get("description") or _first(sources, "description"),
        "text_source": text_source,
        "acronyms": acronyms(name),
        "parent_study_accession": parent,
        "parent_study_name": _first(
            [r for r in sources if r.get("parent_study_accession") == parent], "parent_study_name"
        ),
        "diseases": _first(sources, "diseases") or [],
        "study_designs": _first(sources, "study_designs") or [],
        "related_terms": _first(sources, "related_terms") or [],
        "consent_groups": _first([r for r in (gap_row, export_row) if r], "consent_groups") or [],
        "nih_institute": _first(sources, "nih_institute"),
        "in_advanced_search": export_row is not None,
        "has_gap_exchange": gap_row is not None,
        "on_ftp": on_ftp,
        "synthetic": synthetic,
        "canonical_url": None if synthetic else study_url(version.accession),
    }
    row.update({key: _list_default(key, (export_row or {}).get(key)) for key in EXPORT_ONLY})
    row.update({key: _list_default(key, (gap_row or {}).get(key)) for key in GAP_ONLY})
    return row


def _first(rows: list[Row], key: str) -> Any:
    """The first non-empty value of ``key`` among ``rows``."""
    return next((row[key] for row in rows if row.get(key)), None)


def _list_default(key: str, value: Any) -> Any:
    """Lists are empty rather than null."""
    return [] if value is None and key in LISTS else value

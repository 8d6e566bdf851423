"""Turn a dbGaP snapshot into the registry's tables.

Each XML file is parsed with the standard library into plain rows (files are small;
the whole mirror, 2,000 dictionaries and 136,000 variables, takes a few seconds).
The rows become Arrow tables, and DuckDB adds what needs more than one file: the
per-dataset and per-study counts and the has-statistics flags.
"""

from __future__ import annotations

import re

import duckdb

from metabundle.errors import ParseError
from metabundle.sources.base import ParseContext
from metabundle.sources.dbgap import studies_csv
from metabundle.sources.dbgap.accessions import StudySelector, StudyVersion
from metabundle.sources.dbgap.data_dict import read_data_dict
from metabundle.sources.dbgap.datasets import is_data_dict, is_var_report
from metabundle.sources.dbgap.gap_exchange import GapExchange, read_gap_exchange
from metabundle.sources.dbgap.rows import Row, SetAside, Tables, arrow_rows
from metabundle.sources.dbgap.studies import study_rows, study_versions
from metabundle.sources.dbgap.var_report import read_var_report
from metabundle.sources.dbgap.xmlread import SOURCE, UTF8

FILE_KEY_RE = re.compile(
    r"dbgap/studies/phs\d{6}/(?P<study>phs\d{6}\.v\d+\.p\d+)/"
    r"(?:(?P<gap>GapExchange_[^/]+\.xml)|pheno_variable_summaries/(?P<pheno>[^/]+))"
)


def parse(ctx: ParseContext) -> None:
    """Write every dbGaP table from the snapshot's export and FTP files."""
    snapshot = ctx.snapshot
    export_file = snapshot.file(studies_csv.MIRROR_PATH)
    export = studies_csv.read_studies_csv(
        export_file.path, export_file.key, set_aside_in(ctx, export_file.key)
    )
    tables, gap = read_study_files(ctx)
    on_ftp = set(snapshot.details["ftp_study_versions"])
    versions = study_versions(export, selectors(snapshot.details["studies"]), on_ftp)
    studies = study_rows(versions, export, gap.studies, on_ftp, tables.study_names)
    datasets = combine(tables)
    con = ctx.con
    for view, data in (
        ("study_rows", arrow_rows("dbgap_study", studies)),
        ("dataset_rows", arrow_rows("dbgap_dataset", datasets)),
        ("variable_rows", tables.variables.table()),
        ("stat_rows", tables.stats.table()),
        ("document_rows", arrow_rows("dbgap_document", gap.documents)),
    ):
        con.register(view, data)
    check_unique_variables(con, datasets)
    ctx.write("dbgap_study", con.sql(STUDY_SQL))
    listed_on_ftp = set(snapshot.details.get("ftp_study_bases", ()))
    built = {version.base for version in versions}
    ctx.write(
        "dbgap_unbuilt_study",
        arrow_rows("dbgap_unbuilt_study", unbuilt_studies(export, listed_on_ftp, built)),
    )
    ctx.write("dbgap_dataset", con.sql(DATASET_SQL))
    ctx.write("dbgap_variable", con.sql(VARIABLE_SQL))
    ctx.write("dbgap_variable_value", tables.values.table())
    ctx.write("dbgap_variable_stat", con.table("stat_rows"))
    ctx.write("dbgap_variable_value_count", tables.value_counts.table())
    ctx.write("dbgap_document", con.table("document_rows"))


SYNTHETIC = "study_accession IN (SELECT study_accession FROM study_rows WHERE synthetic)"
"""True for a row of a synthetic study (see ``accessions.SYNTHETIC_STUDIES``)."""

VARIABLE_SQL = f"""
SELECT v.* REPLACE (CASE WHEN {SYNTHETIC} THEN NULL ELSE v.canonical_url END AS canonical_url),
       v.variable_id IN (SELECT variable_id FROM stat_rows) AS has_stats,
       {SYNTHETIC} AS synthetic
FROM variable_rows v
"""

DATASET_SQL = f"""
SELECT d.* REPLACE (CASE WHEN {SYNTHETIC} THEN NULL ELSE d.canonical_url END AS canonical_url),
       coalesce(c.variables, 0) AS variable_count,
       d.dataset_id IN (SELECT dataset_id FROM stat_rows) AS has_var_report,
       {SYNTHETIC} AS synthetic
FROM dataset_rows d
LEFT JOIN (SELECT dataset_id, count(*) AS variables FROM variable_rows GROUP BY dataset_id) c
    USING (dataset_id)
"""

STUDY_SQL = (
    """
WITH datasets AS (
    SELECT study_accession,
           count(*) AS datasets,
           sum(variable_count) AS variables,
           count(*) FILTER (WHERE has_var_report) AS reports
    FROM ("""
    + DATASET_SQL
    + """)
    GROUP BY study_accession
), documents AS (
    SELECT study_accession, count(*) AS documents FROM document_rows GROUP BY study_accession
)
SELECT s.*,
       coalesce(d.variables, 0) > 0 AS has_variables,
       coalesce(d.datasets, 0) AS dataset_count,
       coalesce(d.variables, 0) AS variable_count,
       coalesce(d.reports, 0) AS var_report_dataset_count,
       coalesce(o.documents, 0) AS document_count
FROM study_rows s
LEFT JOIN datasets d USING (study_accession)
LEFT JOIN documents o USING (study_accession)
"""
)


def unbuilt_studies(export: dict[str, Row], on_ftp: set[str], built: set[str]) -> list[Row]:
    """The studies the export or the FTP tree lists that the selection left out."""
    rows = []
    for base in sorted((set(export) | on_ftp) - built):
        listed = export.get(base) or {}
        rows.append(
            {
                "study_base": base,
                "current_accession": listed.get("study_accession"),
                "name": listed.get("name"),
                "acronyms": studies_csv.acronyms(listed.get("name")),
                "in_advanced_search": base in export,
                "on_ftp": base in on_ftp,
            }
        )
    return rows


def set_aside_in(ctx: ParseContext, file: str) -> SetAside:
    """Quarantines a malformed record of ``file`` in the parse's manifest entry."""
    return lambda reason, line: ctx.quarantine(file, reason, line=line)


def read_study_files(ctx: ParseContext) -> tuple[Tables, GapExchange]:
    """Parse every GapExchange, data dictionary and variable report of the snapshot."""
    tables, gap = Tables(), GapExchange()
    for raw in sorted(ctx.snapshot.files, key=lambda f: f.key):
        match = FILE_KEY_RE.fullmatch(raw.key)
        if match is None:
            continue
        study = StudyVersion.parse(match["study"])
        assert study is not None
        pheno = match["pheno"] or ""
        if match["gap"]:
            read_gap_exchange(raw.path, raw.key, study, gap)
        elif is_data_dict(pheno):
            read_data_dict(raw.path, raw.key, study, tables, set_aside_in(ctx, raw.key))
        elif is_var_report(pheno):
            read_var_report(raw.path, raw.key, study, tables, set_aside_in(ctx, raw.key))
    for dataset in tables.datasets + tables.report_datasets:
        if dataset["text_encoding"] != UTF8:
            ctx.report(
                f"{dataset['source_file']}: declared UTF-8, read as {dataset['text_encoding']}"
            )
    return tables, gap


def selectors(studies: str | list[str]) -> tuple[StudySelector, ...] | None:
    """The snapshot's recorded selection (``all`` → ``None``)."""
    if studies == "all":
        return None
    return tuple(StudySelector.parse(text) for text in studies)


def combine(tables: Tables) -> list[Row]:
    """The datasets of the data dictionaries plus those only a variable report
    describes (whose variables join the variable rows); a dataset defined twice is an
    error naming both files."""
    datasets: dict[str, Row] = {}
    for dataset in tables.datasets:
        other = datasets.setdefault(dataset["dataset_id"], dataset)
        if other is not dataset:
            raise ParseError(
                SOURCE,
                dataset["source_file"],
                f"dataset {dataset['dataset_id']} is also defined by {other['source_file']}",
            )
    report_only = {
        d["dataset_id"]: d for d in tables.report_datasets if d["dataset_id"] not in datasets
    }
    tables.variables.extend([v for v in tables.report_variables if v["dataset_id"] in report_only])
    return [*datasets.values(), *report_only.values()]


def check_unique_variables(con: duckdb.DuckDBPyConnection, datasets: list[Row]) -> None:
    """A variable listed twice in one study version is an error naming its file."""
    duplicate = con.sql(
        "SELECT variable_id, min(dataset_id) FROM variable_rows "
        "GROUP BY variable_id HAVING count(*) > 1 ORDER BY variable_id LIMIT 1"
    ).fetchall()
    if duplicate:
        variable_id, dataset_id = duplicate[0]
        source = next(d["source_file"] for d in datasets if d["dataset_id"] == dataset_id)
        raise ParseError(SOURCE, source, f"variable {variable_id} is listed twice")

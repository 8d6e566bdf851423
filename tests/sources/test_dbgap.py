"""dbGaP source: the real mirror (Advanced Search export, GapExchange files, data
dictionaries, variable reports) served over loopback HTTP and read by the production
fetch and parse steps; broken files are served from a modified copy in a temp folder."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

import duckdb
import pytest

from metabundle.config import BuildSettings
from metabundle.db import connect
from metabundle.digest import sha256_file
from metabundle.errors import ConfigError, ParseError
from metabundle.sources.base import ParseContext, SearchDocContext
from metabundle.sources.dbgap import SOURCE, studies_csv
from metabundle.sources.dbgap.accessions import StudyVersion
from metabundle.sources.dbgap.data_dict import read_data_dict
from metabundle.sources.dbgap.datasets import is_data_dict
from metabundle.sources.dbgap.fetch import DEV_STUDIES, csv_public_url
from metabundle.sources.dbgap.rows import Tables
from metabundle.sources.dbgap.studies_csv import read_studies_csv
from metabundle.sources.steps import StagedSource, fetch_source, parse_source
from metabundle.upstream import Upstream
from tests.support.build import SESSION_STUDIES
from tests.support.servers import serve_directory

EXPORT = "dbgap/advanced_search/studies.csv"
VARIABLE_TAG = re.compile(rb"<variable[\s>]")
FILE_PATTERNS = ("GapExchange_*.xml", "pheno_variable_summaries/*.xml")


def build(
    upstream: str, out: Path, studies: tuple[str, ...] = (), profile: str = "complete"
) -> StagedSource:
    """Fetch and parse the dbgap source from ``upstream`` into ``out``."""
    settings = BuildSettings.load(
        out=out,
        sources=("dbgap",),
        upstream=upstream,
        profile=profile,
        dbgap_studies=studies,
    )
    snapshot = fetch_source("dbgap", settings, lambda _: None)
    return parse_source("dbgap", snapshot, settings, lambda _: None)


@pytest.fixture(scope="session")
def sample(mirror_url: str, tmp_path_factory: pytest.TempPathFactory) -> StagedSource:
    """The shared build's studies (a ``list`` selection) over loopback HTTP."""
    return build(mirror_url, tmp_path_factory.mktemp("dbgap-sample"), SESSION_STUDIES)


@pytest.fixture(scope="session")
def db(sample: StagedSource) -> Iterator[duckdb.DuckDBPyConnection]:
    """The sample's staged tables as views of their names."""
    con = connect()
    for name, table in sample.tables.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{table.path}')")
    yield con
    con.close()


@pytest.fixture(scope="session")
def docs(sample: StagedSource) -> Iterator[duckdb.DuckDBPyConnection]:
    """The sample's search documents as table ``docs``."""
    con = connect()
    tables = {name: table.path for name, table in sample.tables.items()}
    relation = SOURCE.search_docs(SearchDocContext(tables, con))
    con.execute(f"CREATE TABLE docs AS {relation.sql_query()}")
    yield con
    con.close()


def rows(con: duckdb.DuckDBPyConnection, query: str) -> list[tuple]:
    return con.execute(query).fetchall()


def record(con: duckdb.DuckDBPyConnection, query: str) -> dict[str, object]:
    """The single row of ``query`` as a column → value mapping."""
    cursor = con.execute(query)
    found = cursor.fetchall()
    assert len(found) == 1, found
    return dict(zip([c[0] for c in cursor.description], found[0], strict=True))


def version_folders(upstream_dir: Path, base: str) -> list[Path]:
    return sorted(p for p in (upstream_dir / "dbgap" / "studies" / base).iterdir() if p.is_dir())


def variable_elements(path: Path) -> int:
    """``<variable>`` elements counted in the raw bytes, independently of the parser."""
    return len(VARIABLE_TAG.findall(path.read_bytes()))


# -- discovery and selection ------------------------------------------------------------


def test_sample_reads_every_file_of_its_studies_found_through_listings(
    sample: StagedSource, upstream_dir: Path
) -> None:
    details = sample.snapshot.details
    assert details["selection"] == "list"
    assert details["studies"] == list(SESSION_STUDIES)
    on_disk = [p for base in SESSION_STUDIES for p in version_folders(upstream_dir, base)]
    assert details["ftp_study_versions"] == [p.name for p in on_disk]
    expected = {
        str(f.relative_to(upstream_dir))
        for folder in on_disk
        for pattern in FILE_PATTERNS
        for f in folder.glob(pattern)
    }
    fetched = {f.key for f in sample.snapshot.files} - {EXPORT}
    assert fetched == expected
    assert all(f.url.startswith("http://127.0.0.1:") for f in sample.snapshot.files)


def test_a_versioned_selection_reads_only_that_version(mirror_url: str, tmp_path: Path) -> None:
    staged = build(mirror_url, tmp_path, studies=("phs000286.v7.p2",))
    assert staged.snapshot.details["ftp_study_versions"] == ["phs000286.v7.p2"]
    con = connect()
    path = staged.tables["dbgap_study"].path
    assert rows(con, f"SELECT study_accession FROM '{path}'") == [("phs000286.v7.p2",)]


@pytest.mark.parametrize(
    ("studies", "message"),
    [
        (("phs999999",), "phs999999 is neither in the Advanced Search export nor on the FTP"),
        (("phs000286.v2.p1",), "phs000286.v2.p1 is neither"),
        (("framingham",), "'framingham' in --dbgap-studies is not an accession"),
    ],
)
def test_unknown_or_malformed_studies_are_config_errors(
    mirror_url: str, tmp_path: Path, studies: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        build(mirror_url, tmp_path, studies=studies)


def test_public_upstream_reads_the_published_export_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("METABUNDLE_DBGAP_STUDIES_CSV_URL", raising=False)
    assert csv_public_url() == studies_csv.DEFAULT_PUBLIC_URL
    assert (
        Upstream()
        .url(studies_csv.MIRROR_PATH, csv_public_url())
        .startswith("https://raw.githubusercontent.com/NIH-NCPI/ncpi-dataset-catalog/")
    )
    monkeypatch.setenv("METABUNDLE_DBGAP_STUDIES_CSV_URL", "file:///data/studies.csv")
    assert csv_public_url() == "file:///data/studies.csv"


# -- studies and the versions rule -----------------------------------------------------


def test_an_older_ftp_version_is_kept_next_to_the_exports_current_one(db) -> None:
    jhs = rows(
        db,
        "SELECT study_accession, is_current_version, current_accession, in_advanced_search, "
        "on_ftp, text_source, dataset_count, variable_count, var_report_dataset_count "
        "FROM dbgap_study WHERE study_base = 'phs000286' ORDER BY version",
    )
    assert jhs == [
        ("phs000286.v6.p2", False, "phs000286.v7.p2", False, True, "current_version", 121, 4905, 0),
        ("phs000286.v7.p2", True, "phs000286.v7.p2", True, True, "advanced_search", 1, 7, 1),
    ]
    areds = rows(
        db,
        "SELECT study_accession, is_current_version, on_ftp, has_variables, variable_count "
        "FROM dbgap_study WHERE study_base = 'phs000001' ORDER BY version",
    )
    assert areds == [
        ("phs000001.v1.p1", False, True, True, 174),
        ("phs000001.v3.p1", True, False, False, 0),
    ]


def test_study_counts_match_the_files(db, upstream_dir: Path) -> None:
    for accession, base in (("phs000286.v6.p2", "phs000286"), ("phs001252.v1.p1", "phs001252")):
        folder = upstream_dir / "dbgap" / "studies" / base / accession / "pheno_variable_summaries"
        dictionaries = [f for f in folder.iterdir() if is_data_dict(f.name)]
        study = record(db, f"SELECT * FROM dbgap_study WHERE study_accession = '{accession}'")
        assert study["dataset_count"] == len(dictionaries)
        assert study["variable_count"] == sum(variable_elements(f) for f in dictionaries)
        assert study["has_variables"] is True


def test_export_columns_are_typed_and_cleaned(db) -> None:
    jhs = record(db, "SELECT * FROM dbgap_study WHERE study_accession = 'phs000286.v7.p2'")
    assert jhs["name"] == "Jackson Heart Study (JHS) Cohort"
    assert jhs["acronyms"] == ["JHS"]
    assert jhs["release_date"] == date(2024, 8, 1)
    assert jhs["embargo_release_date"] == date(2024, 8, 1)
    assert jhs["diseases"] == ["Cardiovascular Diseases"]
    assert jhs["study_designs"] == ["Prospective Longitudinal Cohort"]
    assert jhs["nih_institute"] == "NHLBI"
    assert jhs["consent_groups"][0] == "HMB-IRB-NPU --- Health/Medical/Biomedical (IRB, NPU)"
    assert len(jhs["consent_groups"]) == 4
    assert jhs["related_terms"][:2] == ["Arrhythmias, Cardiac", "Heart Failure"]
    assert (jhs["reported_dataset_count"], jhs["reported_variable_count"]) == (103, 4224)
    assert jhs["reported_subject_count"] == 3889
    assert jhs["canonical_url"] == (
        "https://www.ncbi.nlm.nih.gov/projects/gap/cgi-bin/study.cgi?study_id=phs000286.v7.p2"
    )


def test_the_whole_export_parses_with_whitespace_and_entities_cleaned(
    upstream_dir: Path,
) -> None:
    export = upstream_dir / EXPORT
    raw = export.read_text(encoding="utf-8")
    assert "    " in raw and "&#39;" in raw
    set_aside: list[tuple[str, int | None]] = []
    studies = read_studies_csv(
        export, EXPORT, lambda reason, line: set_aside.append((reason, line))
    )
    assert set_aside == []
    assert len(studies) == 3264
    for row in studies.values():
        for text in (row["name"], row["description"], row["parent_study_name"]):
            assert text is None or ("  " not in text and "&#39;" not in text)
    whi_child = [r for r in studies.values() if r["parent_study_accession"] == "phs000200.v12.p3"]
    assert whi_child and {r["parent_study_name"] for r in whi_child} == {
        "Women's Health Initiative Clinical Trial and Observational Study"
    }
    consents = studies["phs000200"]["consent_groups"]
    assert all(" --- " in c for c in consents)


def test_gap_exchange_gives_the_full_description_and_study_details(db) -> None:
    eclipse = record(db, "SELECT * FROM dbgap_study WHERE study_accession = 'phs001252.v1.p1'")
    assert eclipse["text_source"] == "gap_exchange"
    assert eclipse["name"] == (
        "Evaluation of COPD Longitudinally to Identify Predictive Surrogate Endpoints (ECLIPSE)"
    )
    assert eclipse["acronyms"] == ["ECLIPSE"]
    assert eclipse["description"].startswith("ECLIPSE was a longitudinal observational study")
    assert "FEV1 >85% predicted" in eclipse["description"]
    assert "<p>" not in eclipse["description"]
    assert eclipse["study_designs"] == ["Case-Control", "Longitudinal Cohort", "Cohort"]
    assert eclipse["diseases"] == [
        "Pulmonary Disease, Chronic Obstructive",
        "Pulmonary Emphysema",
        "Smoking",
    ]
    assert eclipse["pubmed_ids"][:3] == ["18216052", "24310110", "24552242"]
    assert eclipse["gap_create_date"] == date(2016, 11, 17)


def test_a_study_missing_from_the_export_is_named_by_its_variable_report(db) -> None:
    study = record(db, "SELECT * FROM dbgap_study WHERE study_base = 'phs001985'")
    assert study["name"] == "Harmonization Test Study 1"
    assert study["text_source"] == "var_report"
    assert (study["in_advanced_search"], study["is_current_version"]) == (False, True)
    assert study["var_report_dataset_count"] == 4


def test_a_synthetic_study_is_labelled_and_has_no_dbgap_url(db) -> None:
    study = record(db, "SELECT * FROM dbgap_study WHERE study_base = 'phs001985'")
    assert (study["synthetic"], study["canonical_url"]) == (True, None)
    for table in ("dbgap_dataset", "dbgap_variable"):
        labels = rows(
            db,
            f"SELECT synthetic, canonical_url IS NULL, count(*) FROM {table} "
            "GROUP BY ALL ORDER BY ALL",
        )
        synthetic = rows(
            db, f"SELECT count(*) FROM {table} WHERE study_accession LIKE 'phs001985.%'"
        )
        assert labels == [(False, False, labels[0][2]), (True, True, synthetic[0][0])]
    real = record(db, "SELECT * FROM dbgap_study WHERE study_accession = 'phs000286.v7.p2'")
    assert real["synthetic"] is False and real["canonical_url"].startswith("https://www.ncbi.")


def test_studies_the_selection_left_out_are_listed_with_their_names(db, upstream_dir) -> None:
    export = read_studies_csv(upstream_dir / EXPORT, EXPORT, lambda *_: None)
    on_ftp = {p.name for p in (upstream_dir / "dbgap" / "studies").iterdir()}
    built = {b for (b,) in rows(db, "SELECT DISTINCT study_base FROM dbgap_study")}
    assert built == set(SESSION_STUDIES)
    unbuilt = {
        r[0]: r[1:] for r in rows(db, "SELECT study_base, name, acronyms FROM dbgap_unbuilt_study")
    }
    assert set(unbuilt) == (set(export) | on_ftp) - built
    name, acronyms = unbuilt["phs000179"]
    assert name == export["phs000179"]["name"] and "COPDGene" in acronyms


def test_the_dev_profile_reads_its_real_studies_only(mirror_url: str, tmp_path: Path) -> None:
    staged = build(mirror_url, tmp_path / "out", profile="dev")
    details = staged.snapshot.details
    assert (details["selection"], details["studies"]) == ("dev", list(DEV_STUDIES))
    with connect() as con:
        bases = con.execute(
            f"SELECT DISTINCT study_base, synthetic FROM read_parquet("
            f"'{staged.tables['dbgap_study'].path}') ORDER BY 1"
        ).fetchall()
    assert bases == [(base, False) for base in DEV_STUDIES]


# -- datasets, variables and coded values -------------------------------------------


def test_every_data_dictionary_of_the_mirror_parses_with_all_its_variables(
    upstream_dir: Path,
) -> None:
    """The full mirror, through the parser functions on the folder's files."""
    files = sorted((upstream_dir / "dbgap" / "studies").glob("*/*/pheno_variable_summaries/*"))
    dictionaries = [f for f in files if is_data_dict(f.name)]
    assert len(dictionaries) == 2005
    assert any(re.search(r"data_dict_\d{4}_\d\d_\d\d\.xml$", f.name) for f in dictionaries)
    tables = Tables()
    set_aside: list[tuple[str, int | None]] = []
    for path in dictionaries:
        study = StudyVersion.parse(path.parent.parent.name)
        assert study is not None
        read_data_dict(
            path,
            str(path.relative_to(upstream_dir)),
            study,
            tables,
            lambda reason, line: set_aside.append((reason, line)),
        )
    assert set_aside == []
    variables = tables.variables.table()
    per_dataset = Counter(variables.column("dataset_id").to_pylist())
    file_of = {d["dataset_id"]: d["source_file"] for d in tables.datasets}
    assert len(file_of) == len(dictionaries)
    parsed = {file_of[dataset]: count for dataset, count in per_dataset.items()}
    expected = {f.name: variable_elements(f) for f in dictionaries}
    assert {name: parsed.get(name, 0) for name in expected} == expected
    assert variables.num_rows == 136_551
    repaired = [d for d in tables.datasets if d["text_encoding"] != "utf-8"]
    assert [d["source_file"] for d in repaired] == [
        "phs000218.v23.pht002630.v11.TARGET_NBL_Subject_Phenotypes.data_dict.xml"
    ]
    labels = tables.values.table().column("label").to_pylist()
    assert any("traumeel® S (IND # 66649)" in (label or "") for label in labels)


def test_an_older_dated_data_dictionary_parses(db) -> None:
    dataset = record(
        db, "SELECT * FROM dbgap_dataset WHERE dataset_id = 'phs000001.v1.p1/pht000001.v1.p1'"
    )
    assert dataset["source_file"] == "phs000001.v1.pht000001.v1.ardpheno.data_dict_2008_10_31.xml"
    assert dataset["name"] == "ardpheno"
    assert dataset["date_created"] == date(2008, 10, 31)
    assert dataset["variable_count"] == 174
    assert dataset["canonical_url"] == (
        "https://www.ncbi.nlm.nih.gov/projects/gap/cgi-bin/dataset.cgi"
        "?study_id=phs000001.v1.p1&pht=1"
    )


def test_variables_carry_their_dictionary_fields(db) -> None:
    angina = record(
        db,
        "SELECT * FROM dbgap_variable WHERE variable_id = 'phs000001.v1.p1/phv00000136.v1.p1'",
    )
    assert (angina["name"], angina["description"]) == (
        "angina00",
        "History of angina (at follow-up year 0)",
    )
    assert (angina["variable_base"], angina["variable_version"]) == ("phv00000136", 1)
    assert (angina["type"], angina["value_count"], angina["has_stats"]) == ("Char", 3, False)
    assert angina["canonical_url"] == (
        "https://www.ncbi.nlm.nih.gov/projects/gap/cgi-bin/variable.cgi"
        "?study_id=phs000001.v1.p1&phv=136"
    )
    age = record(
        db,
        "SELECT * FROM dbgap_variable WHERE study_accession = 'phs000001.v1.p1' "
        "AND name = 'agecont'",
    )
    assert (age["type"], age["units"]) == ("Num", "year")


def test_coded_values_are_listed_in_file_order(db) -> None:
    values = rows(
        db,
        "SELECT value_order, code, label, is_replacement FROM dbgap_variable_value "
        "WHERE variable_id = 'phs000001.v1.p1/phv00000136.v1.p1' ORDER BY value_order",
    )
    assert values == [
        (
            1,
            "0",
            "No Research Use Permitted: including HapMap, pedigree-linking, and genotype "
            "control subjects",
            False,
        ),
        (2, "N", "no", False),
        (3, "Y", "yes", False),
    ]


# -- variable reports ----------------------------------------------------------------


def test_the_real_jhs_report_gives_stats_per_consent_group(db) -> None:
    consent = "phs000286.v7.p2/phv00124546.v4.p2"
    stats = rows(
        db,
        "SELECT consent_group, consent_number, calculated_type, n, nulls, mean_count, sd, "
        "median_count, min_count, max_count, male_count, female_count "
        f"FROM dbgap_variable_stat WHERE variable_id = '{consent}' ORDER BY consent_group",
    )
    assert stats[0] == ("c1", 1, "enum_integer", 883, 0, 883.0, None, 883.0, 883, 883, 307, 576)
    assert stats[-1] == (
        "total",
        None,
        "enum_integer",
        5885,
        0,
        1177.0,
        919.7,
        883.0,
        201,
        2289,
        2566,
        3319,
    )
    assert len(stats) == 5
    counts = rows(
        db,
        "SELECT kind, code, value, count FROM dbgap_variable_value_count "
        f"WHERE variable_id = '{consent}' AND consent_group = 'total' ORDER BY value_order",
    )
    assert counts[0] == ("enum", "3", "Health/Medical/Biomedical (IRB) (HMB-IRB)", 2289)
    assert [c[3] for c in counts] == [2289, 1996, 883, 516, 201]
    source = rows(
        db,
        "SELECT count(*) FROM dbgap_variable_stat s JOIN dbgap_variable v USING (variable_id) "
        "WHERE v.metadata_source = 'var_report'",
    )
    assert source[0][0] == 35


def test_the_synthetic_reports_give_numeric_summaries(db) -> None:
    height = record(
        db,
        "SELECT s.*, v.name, v.units FROM dbgap_variable_stat s JOIN dbgap_variable v "
        "USING (variable_id) WHERE v.study_accession = 'phs001985.v1.p1' AND v.name = 'HGTV1' "
        "AND s.consent_group = 'total'",
    )
    assert (height["n"], height["nulls"]) == (20, 0)
    assert (height["mean"], height["sd"], height["median"]) == (164.5, 10.72, 163.0)
    assert (height["min"], height["max"], height["units"]) == (143.0, 181.0, "cm")
    examples = rows(
        db,
        "SELECT kind, value, count FROM dbgap_variable_value_count "
        f"WHERE variable_id = '{height['variable_id']}' AND consent_group = 'total' "
        "ORDER BY value_order LIMIT 2",
    )
    assert examples == [("example", "176", 3), ("example", "161", 2)]
    assert rows(
        db,
        "SELECT mean FROM dbgap_variable_stat "
        f"WHERE variable_id = '{height['variable_id']}' AND consent_group = 'c1'",
    ) == [(165.9,)]


# -- documents -------------------------------------------------------------------------


def test_gap_exchange_documents_are_listed_by_title(db) -> None:
    documents = rows(
        db,
        "SELECT document_id, title, document_type, file_name, content_indexed, canonical_url "
        "FROM dbgap_document ORDER BY document_id",
    )
    assert documents[0] == (
        "phs000160.v1.p1/phd001495.1",
        "LOAD Data Element Dictionary",
        "protocol",
        "load_DataElementDictionary.pdf",
        False,
        "https://www.ncbi.nlm.nih.gov/projects/gap/cgi-bin/document.cgi"
        "?study_id=phs000160.v1.p1&phd=1495",
    )
    assert [d[2] for d in documents if d[0].startswith("phs000424")] == ["questionnaire"]
    annotated = rows(
        db,
        "SELECT annotated_variable_count FROM dbgap_document "
        "WHERE document_id = 'phs000160.v1.p1/phd001495.1'",
    )
    assert annotated[0][0] > 0
    assert rows(db, "SELECT document_count FROM dbgap_study WHERE study_base = 'phs000160'") == [
        (2,)
    ]


# -- search documents ------------------------------------------------------------------


def test_search_documents_follow_the_retrieval_contract(docs) -> None:
    variable = record(
        docs, "SELECT * FROM docs WHERE doc_id = 'dbgap:variable:phs000001.v1.p1/phv00000136.v1.p1'"
    )
    assert variable["title"] == "History of angina (at follow-up year 0)"
    assert variable["embed_text"] == variable["title"]
    assert variable["body"] == "angina00 | ardpheno | NEI Age-Related Eye Disease Study (AREDS)"
    assert (variable["study_id"], variable["parent_id"]) == ("phs000001.v1.p1", "pht000001.v1.p1")
    assert variable["identifiers"] == [
        "angina00",
        "phv00000136",
        "phv00000136.v1",
        "phv00000136.v1.p1",
    ]
    document = record(docs, "SELECT * FROM docs WHERE kind = 'document' AND title LIKE 'LOAD%'")
    assert (document["body"], document["embed_text"]) == (None, "LOAD Data Element Dictionary")
    study = record(docs, "SELECT * FROM docs WHERE doc_id = 'dbgap:study:phs000286.v7.p2'")
    assert study["title"] == "Jackson Heart Study (JHS) Cohort"
    assert "Cardiovascular Diseases" in study["body"] and "Heart Failure" in study["body"]
    assert study["identifiers"] == ["jhs", "phs000286", "phs000286.v7.p2"]
    dataset = record(
        docs, "SELECT * FROM docs WHERE doc_id = 'dbgap:dataset:phs000286.v7.p2/pht001920.v6.p2'"
    )
    assert (dataset["title"], dataset["embed_text"]) == ("JHS_Subject", "JHS_Subject")
    counts = dict(rows(docs, "SELECT kind, count(*) FROM docs GROUP BY kind"))
    assert counts == {"study": 9, "dataset": 176, "variable": 6574, "document": 3}


# -- malformed input ---------------------------------------------------------------------


@pytest.fixture
def broken_mirror(upstream_dir: Path, tmp_path: Path) -> Path:
    """A copy of the export and of AREDS's files, served from a temp folder."""
    root = tmp_path / "mirror"
    (root / "dbgap" / "advanced_search").mkdir(parents=True)
    shutil.copy(upstream_dir / EXPORT, root / EXPORT)
    shutil.copytree(
        upstream_dir / "dbgap" / "studies" / "phs000001", root / "dbgap" / "studies" / "phs000001"
    )
    return root


def dictionary_of(root: Path) -> Path:
    return next((root / "dbgap" / "studies" / "phs000001").glob("*/*/*.xml"))


def test_a_truncated_data_dictionary_fails_naming_the_file_and_line(
    broken_mirror: Path, tmp_path: Path
) -> None:
    path = dictionary_of(broken_mirror)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with serve_directory(broken_mirror) as url, pytest.raises(ParseError) as caught:
        build(url, tmp_path / "out", studies=("phs000001",))
    error = caught.value
    assert error.file == str(path.relative_to(broken_mirror))
    assert error.line is not None and error.line > 1
    assert path.name in str(error) and f"line {error.line}" in str(error)


def test_a_malformed_var_report_fails_naming_the_file(
    upstream_dir: Path, broken_mirror: Path, tmp_path: Path
) -> None:
    source = upstream_dir / "dbgap" / "studies" / "phs001985"
    target = broken_mirror / "dbgap" / "studies" / "phs001985"
    shutil.copytree(source, target)
    report = next(target.glob("*/*/*Subject.var_report.xml"))
    report.write_text(report.read_text().replace("</stats>", "</stat>", 1))
    with serve_directory(broken_mirror) as url, pytest.raises(ParseError) as caught:
        build(url, tmp_path / "out", studies=("phs001985",))
    assert caught.value.file.endswith(report.name)
    assert "mismatched tag" in str(caught.value)


def edit_export(root: Path, number: int, change: Callable[[str], str]) -> None:
    """Line ``number`` (1 = the header) of the mirror copy's export changed."""
    export = root / EXPORT
    lines = export.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[number - 1] = change(lines[number - 1])
    export.write_text("".join(lines), encoding="utf-8")


def test_a_bad_date_in_the_export_is_quarantined_with_its_line(
    broken_mirror: Path, tmp_path: Path
) -> None:
    edit_export(broken_mirror, 2, lambda line: line.replace('"2026-02-02"', '"02/02/2026"', 1))
    with serve_directory(broken_mirror) as url:
        staged = build(url, tmp_path / "out", studies=("phs000001",))
    assert staged.quarantine == {
        EXPORT: {
            "count": 1,
            "examples": [
                {"line": 2, "reason": "Release Date '02/02/2026' is not a YYYY-MM-DD date"}
            ],
        }
    }


def test_a_short_record_of_the_export_is_quarantined_and_the_rest_load(
    upstream_dir: Path, tmp_path: Path
) -> None:
    export = tmp_path / "studies.csv"
    lines = (upstream_dir / EXPORT).read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[9].startswith('"phs')
    lines[9] = '","'.join(lines[9].split('","')[:3]) + '"\n'  # every cell is quoted
    export.write_text("".join(lines), encoding="utf-8")
    set_aside: list[tuple[str, int | None]] = []
    studies = read_studies_csv(
        export, EXPORT, lambda reason, line: set_aside.append((reason, line))
    )
    assert set_aside == [("the record has 3 cells, the header 16", 10)]
    assert len(studies) == 3264 - 1


def test_an_export_cut_short_fails_naming_its_last_line(
    broken_mirror: Path, tmp_path: Path
) -> None:
    export = broken_mirror / EXPORT
    text = export.read_text(encoding="utf-8")
    cut = text.rindex('","', 0, len(text) - 1) + 1  # after a cell's closing quote
    export.write_text(text[:cut], encoding="utf-8")
    with serve_directory(broken_mirror) as url, pytest.raises(ParseError) as caught:
        build(url, tmp_path / "out", studies=("phs000001",))
    assert (caught.value.file, caught.value.line) == (EXPORT, text[:cut].count("\n") + 1)
    assert "the file ends inside its last record, which is cut short" in str(caught.value)


def test_a_data_dictionary_variable_without_its_id_is_quarantined_with_its_line(
    broken_mirror: Path, tmp_path: Path
) -> None:
    """A record of a data dictionary is one ``<variable>`` element with its values."""
    path = dictionary_of(broken_mirror)
    text = path.read_text(encoding="utf-8")
    start = text.index("<variable id=", text.index("<variable id=") + 1)
    end = text.index(">", start)
    path.write_text(text[:start] + "<variable" + text[end:], encoding="utf-8")
    with serve_directory(broken_mirror) as url:
        staged = build(url, tmp_path / "out", studies=("phs000001",))
    key = str(path.relative_to(broken_mirror))
    line = text[:start].count("\n") + 1
    assert staged.quarantine == {
        key: {"count": 1, "examples": [{"line": line, "reason": "<variable> has no id attribute"}]}
    }
    assert staged.row_counts["dbgap_variable"] == variable_elements(path) - 1


def test_a_var_report_variable_with_a_bad_count_is_quarantined(
    upstream_dir: Path, broken_mirror: Path, tmp_path: Path
) -> None:
    target = broken_mirror / "dbgap" / "studies" / "phs001985"
    shutil.copytree(upstream_dir / "dbgap" / "studies" / "phs001985", target)
    report = next(target.glob("*/*/*Subject.var_report.xml"))
    text = report.read_text(encoding="utf-8")
    position = text.index(' n="')
    report.write_text(text[:position] + ' n="many' + text[position + 4 :], encoding="utf-8")
    with serve_directory(broken_mirror) as url:
        staged = build(url, tmp_path / "out", studies=("phs001985",))
    [entry] = staged.quarantine.values()
    assert entry["count"] == 1
    [example] = entry["examples"]
    assert example["reason"].startswith("n='many") and "is not a number" in example["reason"]
    variable_line = text[: text.rindex("<variable", 0, position)].count("\n") + 1
    assert example["line"] == variable_line


def test_the_complete_profile_takes_every_study_folder_upstream(
    broken_mirror: Path, upstream_dir: Path, tmp_path: Path
) -> None:
    shutil.copytree(
        upstream_dir / "dbgap" / "studies" / "phs001986",
        broken_mirror / "dbgap" / "studies" / "phs001986",
    )
    with serve_directory(broken_mirror) as url:
        staged = build(url, tmp_path / "out")
    details = staged.snapshot.details
    assert details["selection"] == "all"
    assert details["ftp_study_versions"] == ["phs000001.v1.p1", "phs001986.v1.p1"]
    assert staged.row_counts["dbgap_study"] == 3264 + 2  # the export, AREDS v1, phs001986 v1
    reports = (broken_mirror / "dbgap" / "studies" / "phs001986").glob("*/*/*.var_report.xml")
    assert staged.row_counts["dbgap_variable_stat"] == sum(variable_elements(f) for f in reports)


# -- determinism -------------------------------------------------------------------------


def test_parsing_the_same_snapshot_twice_gives_identical_files(
    sample: StagedSource, tmp_path: Path
) -> None:
    settings = BuildSettings.load(out=tmp_path)
    for attempt in ("a", "b"):
        ctx = ParseContext(sample.snapshot, settings, tmp_path / attempt, lambda _: None)
        (tmp_path / attempt).mkdir()
        try:
            SOURCE.parse(ctx)
        finally:
            ctx.close()
    for name in SOURCE.tables:
        first, second = (tmp_path / a / f"{name}.parquet" for a in ("a", "b"))
        assert sha256_file(first) == sha256_file(second), name

"""Imaging Data Commons beyond the shipped indices: the specialized indices and the
clinical tables fetched from a mirror, the tools over them, manifests for a cohort of
any size, citations in every format, date ranges, viewer links and earlier versions.

The session build reads them from its loopback mirror, where they are tables GENERATED
from the package's own schema JSON (``tests.support.idc_generated``), with one index
left out so the build also shows a missing index (``tests/conftest.py``). Golden
values come from DuckDB over the package's and the generated Parquet files, never
from the release.
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bibtexparser
import duckdb
import idc_index_data
import pyarrow.parquet as pq
import pytest
import rdflib
from mcp import Client

from metabundle.mcp.resources import IDC_GUIDE_URI
from metabundle.mcp.server import build_server
from metabundle.schemas.idc_indices import INDEX_TABLES, unshipped_indices
from metabundle.search.release import Release
from metabundle.search.services.idc.filters import compile_filters
from metabundle.search.services.idc.manifest import manifest_lines, scope
from metabundle.search.tools import call_tool
from tests.support.build import Build
from tests.support.cli import run_cli
from tests.support.idc_generated import CLINICAL_TABLE
from tests.support.mirrors import OMITTED_IDC_INDEX as OMITTED
from tests.support.mirrors import ServedMirror
from tests.support.servers import serve_directory

SERIES = str(idc_index_data.IDC_INDEX_PARQUET_FILEPATH)
PRIOR = str(idc_index_data.PRIOR_VERSIONS_INDEX_PARQUET_FILEPATH)
BREAST_MR = {"Modality": ["MR"], "BodyPartExamined": ["BREAST"]}
PAGE_BYTES = 64 * 1024


def ok(release: Release, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    payload = call_tool(release, name, arguments)
    assert "error" not in payload, payload
    return payload


@pytest.fixture(scope="module")
def idc(release: Release) -> Release:
    """The session build: its mirror serves the generated indices (``tests/conftest.py``)."""
    return release


@pytest.fixture(scope="module")
def idc_build(mirror_build: Build) -> Build:
    return mirror_build


@pytest.fixture(scope="module")
def files(served_mirror: ServedMirror) -> dict[str, Path]:
    return served_mirror.generated


@pytest.fixture(scope="module")
def golden(files: dict[str, Path]) -> Iterator[duckdb.DuckDBPyConnection]:
    """The package's and the generated Parquet files as views, on our own connection."""
    con = duckdb.connect()
    con.execute(f"CREATE VIEW series AS SELECT * FROM read_parquet('{SERIES}')")
    con.execute(f"CREATE VIEW prior AS SELECT * FROM read_parquet('{PRIOR}')")
    for name, path in files.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")
    yield con
    con.close()


# -- the indices load with the package's schema ------------------------------------------


def test_each_fetched_index_loads_with_the_package_schema(
    idc: Release, files: dict[str, Path]
) -> None:
    for name in unshipped_indices():
        table = INDEX_TABLES[name].name
        columns = [row[0] for row in idc.query(f"DESCRIBE {table}")]
        schema = idc_index_data.INDEX_METADATA[name]["schema"]["columns"]
        assert columns == [c["name"] for c in schema], name
        rows = idc.query(f"SELECT count(*) FROM {table}")[0][0]
        expected = 0 if name == OMITTED else pq.ParquetFile(files[name]).metadata.num_rows
        assert rows == expected, name
    clinical = idc.query("SELECT count(*) FROM idc_clinical_value WHERE value IS NOT NULL")[0][0]
    assert clinical == 2 * pq.ParquetFile(files[CLINICAL_TABLE]).metadata.num_rows


def test_a_build_without_an_index_succeeds_and_names_it_missing(idc: Release) -> None:
    coverage = idc.manifest["coverage"]["sources"]["idc"]
    assert coverage["complete"] is False
    assert coverage["counts"]["indices_missing"] == [OMITTED]
    assert OMITTED in coverage["left_out"][0]["what"]
    assert "metabundle mirror" in coverage["left_out"][0]["remedy"]
    refused = call_tool(idc, "get_attribute_values", {"attribute": f"{OMITTED}.GraphicType"})
    assert refused["error"]["code"] == "not_found"
    assert refused["error"]["details"]["reason"] == "not_in_release"


def test_mirror_copies_the_fetched_files_in_their_layout(
    served_mirror: ServedMirror, tmp_path: Path
) -> None:
    root, written = served_mirror.root, served_mirror.generated
    with serve_directory(root) as url:
        result = run_cli(
            "mirror", "--to", str(tmp_path / "copy"), "--sources", "idc", "--upstream", url,
            "--cache", str(tmp_path / "cache"),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    copied = sorted(
        p.relative_to(tmp_path / "copy") for p in (tmp_path / "copy").rglob("*.parquet")
    )
    assert copied == sorted(p.relative_to(root) for p in written.values())
    for path in written.values():
        assert (tmp_path / "copy" / path.relative_to(root)).read_bytes() == path.read_bytes()


# -- tools over the indices ----------------------------------------------------------------


def test_segmented_anatomy_is_answered_from_seg_index(idc: Release, golden) -> None:
    payload = ok(idc, "get_attribute_values", {"attribute": "SegmentedPropertyType_CodeMeanings"})
    expected = golden.execute(
        "SELECT v, count(*) FROM (SELECT unnest(SegmentedPropertyType_CodeMeanings) AS v "
        "FROM seg_index) GROUP BY 1 ORDER BY 2 DESC, 1"
    ).fetchall()
    assert [(v["value"], v["series"]) for v in payload["values"]] == expected
    assert payload["name"] == "seg_index.SegmentedPropertyType_CodeMeanings"
    assert any("BodyPartExamined" in note for note in payload["notes"])
    listed = ok(idc, "list_index_attributes", {"index": "seg_index"})["indices"][0]
    assert (
        listed["loaded"]
        and listed["rows"] == golden.execute("SELECT count(*) FROM seg_index").fetchone()[0]
    )


def test_cohorts_filtered_on_index_attributes_equal_direct_queries(idc: Release, golden) -> None:
    liver = ok(
        idc,
        "build_cohort",
        {"filters": {"Modality": ["CT"], "SegmentedPropertyType_CodeMeanings": ["Liver"]}},
    )
    expected = golden.execute(
        "SELECT count(*), count(DISTINCT StudyInstanceUID) FROM series WHERE Modality = 'CT' "
        "AND SeriesInstanceUID IN (SELECT segmented_SeriesInstanceUID FROM seg_index "
        "WHERE list_contains(SegmentedPropertyType_CodeMeanings, 'Liver'))"
    ).fetchone()
    assert (liver["counts"]["series"], liver["counts"]["studies"]) == expected
    assert expected[0] > 0
    thin = ok(idc, "build_cohort", {"filters": {"mr_index.SliceThickness": {"max": 2}}})
    assert (
        thin["counts"]["series"]
        == golden.execute(
            "SELECT count(*) FROM series WHERE SeriesInstanceUID IN "
            "(SELECT SeriesInstanceUID FROM mr_index WHERE SliceThickness <= 2)"
        ).fetchone()[0]
    )
    stained = ok(
        idc,
        "build_cohort",
        {
            "filters": {
                "staining_usingSubstance_CodeMeaning": ["water soluble eosin stain"],
                "ObjectiveLensPower": [40],
            }
        },
    )
    assert (
        stained["counts"]["series"]
        == golden.execute(
            "SELECT count(*) FROM series WHERE SeriesInstanceUID IN (SELECT SeriesInstanceUID "
            "FROM sm_index WHERE list_contains(staining_usingSubstance_CodeMeaning, "
            "'water soluble eosin stain') AND ObjectiveLensPower = 40)"
        ).fetchone()[0]
    )
    ambiguous = call_tool(idc, "build_cohort", {"filters": {"SliceThickness": {"max": 2}}})
    assert "mr_index.SliceThickness" in ambiguous["error"]["details"]["suggestions"]


def test_clinical_values_join_to_a_cohort_by_patient(idc: Release, golden) -> None:
    tables = ok(idc, "list_clinical_tables", {})["tables"]
    assert [t["short_table_name"] for t in tables] == [CLINICAL_TABLE]
    collection = tables[0]["collection_id"]
    schema = ok(idc, "get_clinical_table_schema", {"table": CLINICAL_TABLE})
    assert {c["column"] for c in schema["columns"]} == {
        "dicom_patient_id",
        "stage",
        "survival_days",
    }
    study = golden.execute(
        f"SELECT StudyInstanceUID FROM series WHERE collection_id = ? AND PatientID IN "
        f"(SELECT dicom_patient_id FROM {CLINICAL_TABLE}) ORDER BY 1 LIMIT 1",
        [collection],
    ).fetchone()[0]
    filters = {"StudyInstanceUID": [study]}
    payload = ok(
        idc,
        "get_clinical_values",
        {"table": CLINICAL_TABLE, "columns": ["stage", "survival_days"], "filters": filters},
    )
    expected = golden.execute(
        f"SELECT dicom_patient_id, stage, CAST(survival_days AS VARCHAR) FROM {CLINICAL_TABLE} "
        "WHERE dicom_patient_id IN (SELECT PatientID FROM series WHERE StudyInstanceUID = ? "
        "AND collection_id = ?) ORDER BY 1",
        [study, collection],
    ).fetchall()
    got = [(r["dicom_patient_id"], r["stage"], r["survival_days"]) for r in payload["rows"]]
    assert got == expected and len(expected) == 1
    assert payload["cohort"] == {"patients": 1, "patients_with_rows": 1}


def test_iso_date_ranges_filter_date_attributes(idc: Release, golden) -> None:
    filters = {"Modality": ["MR"], "StudyDate": {"min": "2010-01-01", "max": "2010-12-31"}}
    payload = ok(idc, "build_cohort", {"filters": filters, "limit": 0})
    assert (
        payload["counts"]["series"]
        == golden.execute(
            "SELECT count(*) FROM series WHERE Modality = 'MR' AND "
            "TRY_CAST(StudyDate AS DATE) BETWEEN DATE '2010-01-01' AND DATE '2010-12-31'"
        ).fetchone()[0]
    )
    for bad in ({"StudyDate": {"min": "2010-13-01"}}, {"Modality": {"min": "2010-01-01"}}):
        assert call_tool(idc, "build_cohort", {"filters": bad})["error"]["code"] == (
            "invalid_request"
        )


# -- manifests for any cohort --------------------------------------------------------------


def test_a_48000_series_selection_pages_to_the_end(idc: Release, golden) -> None:
    expected = dict(
        golden.execute(
            "SELECT SeriesInstanceUID, crdc_series_uuid FROM series "
            "WHERE Modality = 'MR' AND BodyPartExamined = 'BREAST'"
        ).fetchall()
    )
    assert len(expected) > 48_000
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = ok(idc, "get_cohort_urls", {"filters": BREAST_MR, "limit": 200, "offset": offset})
        assert len(json.dumps(page)) < PAGE_BYTES
        assert page["counts"]["series"] == len(expected) and page["total_size"]["bytes"] > 0
        assert "--filters" in page["download"]["aws"]["write_manifest"]
        for entry in page["series"]:
            assert entry["aws"].startswith("s3://") and entry["gcs"].startswith("gs://")
            assert entry["aws"].endswith(f"/{expected[entry['SeriesInstanceUID']]}/")
        seen += [entry["SeriesInstanceUID"] for entry in page["series"]]
        offset = page["page"]["next_offset"]
    assert len(seen) == len(set(seen)) == len(expected)


def test_the_manifest_lists_every_series_once_in_constant_memory(
    idc: Release, golden, tmp_path: Path
) -> None:
    rows = scope(compile_filters(idc, BREAST_MR))
    target = tmp_path / "idc_manifest_aws.s5cmd"
    tracemalloc.start()
    with target.open("w") as out:
        for line in manifest_lines(idc, rows, "aws"):
            out.write(line + "\n")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    lines = [line for line in target.read_text().splitlines() if not line.startswith("#")]
    expected = {
        f"cp s3://{bucket}/{uuid}/* ."
        for bucket, uuid in golden.execute(
            "SELECT aws_bucket, crdc_series_uuid FROM series "
            "WHERE Modality = 'MR' AND BodyPartExamined = 'BREAST'"
        ).fetchall()
    }
    assert len(lines) == len(set(lines)) and set(lines) == expected
    # streaming holds a batch, not the manifest: its peak is a fraction of the output
    assert peak < target.stat().st_size / 4


def test_the_manifest_command_writes_the_selection(idc: Release, idc_build: Build, golden) -> None:
    filters = {"collection_id": ["rider_phantom_mri"]}
    payload = ok(idc, "get_cohort_urls", {"filters": filters, "limit": 1})
    command = payload["download"]["gcs"]["write_manifest"]
    assert command.startswith("metabundle idc-manifest --provider gcs --filters ")
    result = run_cli(
        "idc-manifest", "--provider", "gcs", "--filters", json.dumps(filters),
        "--release", str(idc_build.release),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if not line.startswith("#")]
    count = golden.execute(
        "SELECT count(*) FROM series WHERE collection_id = 'rider_phantom_mri'"
    ).fetchone()[0]
    assert len(lines) == len(set(lines)) == count
    assert all(line.startswith("cp gs://") for line in lines)
    bad = run_cli("idc-manifest", "--filters", '{"Nope": [1]}', "--release", str(idc_build.release))
    assert bad.returncode == 1 and "Nope" in bad.stderr and "Traceback" not in bad.stderr


def test_per_file_https_urls_only_where_the_release_lists_files(idc: Release, golden) -> None:
    listed = dict(
        golden.execute(
            "SELECT SeriesInstanceUID, list(crdc_instance_uuid ORDER BY crdc_instance_uuid) "
            "FROM sm_instance_index GROUP BY 1"
        ).fetchall()
    )
    uid = min(listed)
    bucket, uuid = golden.execute(
        "SELECT aws_bucket, crdc_series_uuid FROM series WHERE SeriesInstanceUID = ?", [uid]
    ).fetchone()
    other = golden.execute(
        "SELECT SeriesInstanceUID FROM series WHERE Modality = 'CT' ORDER BY 1 LIMIT 1"
    ).fetchone()[0]
    payload = ok(
        idc,
        "get_cohort_urls",
        {"filters": {"SeriesInstanceUID": [uid, other]}, "files": True, "provider": "aws"},
    )
    entries = {e["SeriesInstanceUID"]: e for e in payload["series"]}
    assert entries[uid]["https_files"]["aws"] == [
        f"https://{bucket}.s3.amazonaws.com/{uuid}/{instance}.dcm" for instance in listed[uid]
    ]
    assert "https_files" not in entries[other] and entries[other]["aws"].startswith("s3://")


def test_a_manifest_as_of_an_earlier_version(idc: Release, golden) -> None:
    version, collection = golden.execute(
        "SELECT max_idc_version, collection_id FROM prior GROUP BY 1, 2 "
        "ORDER BY count(*) DESC LIMIT 1"
    ).fetchone()
    expected = golden.execute(
        "SELECT crdc_series_uuid FROM series WHERE collection_id = ? "
        "AND series_revised_idc_version <= ? UNION ALL SELECT crdc_series_uuid FROM prior "
        "WHERE collection_id = ? AND min_idc_version <= ? AND max_idc_version >= ?",
        [collection, version, collection, version, version],
    ).fetchall()
    payload = ok(
        idc,
        "get_cohort_urls",
        {"filters": {"collection_id": [collection]}, "idc_version": version, "limit": 1},
    )
    assert payload["idc_version"] == f"v{version}"
    assert payload["counts"]["series"] == len(expected)
    assert f"--idc-version {version}" in payload["download"]["aws"]["write_manifest"]
    rows = scope(compile_filters(idc, {"collection_id": [collection]}), version)
    uuids = [line.split("/")[3] for line in manifest_lines(idc, rows, "aws") if line[0] != "#"]
    assert sorted(uuids) == sorted(u for (u,) in expected)
    refused = call_tool(
        idc, "get_cohort_urls", {"filters": {"BodyPartExamined": ["CHEST"]}, "idc_version": 5}
    )
    assert refused["error"]["code"] == "invalid_request"


# -- citations, viewer, guide --------------------------------------------------------------


def _collection_dois(golden: duckdb.DuckDBPyConnection, collection: str) -> set[str]:
    return {
        doi
        for (doi,) in golden.execute(
            "SELECT DISTINCT lower(source_DOI) FROM series WHERE collection_id = ?", [collection]
        ).fetchall()
    }


@pytest.mark.parametrize("collection", ["tcga_luad", "nlst"])
def test_citations_parse_in_every_format(idc: Release, golden, collection: str) -> None:
    dois = _collection_dois(golden, collection) | {"10.1148/rg.230180"}
    arguments = {"collection_id": collection, "limit": 300}
    bib = ok(idc, "get_citations", {**arguments, "format": "bibtex"})["document"]
    library = bibtexparser.parse_string(bib)
    assert not library.failed_blocks
    assert {e.fields_dict["doi"].value for e in library.entries} == dois
    csl = ok(idc, "get_citations", {**arguments, "format": "csl-json"})["document"]
    items = json.loads(json.dumps(csl))
    assert {item["DOI"] for item in items} == dois
    assert all(item["title"] and item["author"] and item["issued"] for item in items)
    ttl = ok(idc, "get_citations", {**arguments, "format": "turtle"})["document"]
    graph = rdflib.Graph().parse(data=ttl, format="turtle")
    identifiers = {str(o) for o in graph.objects(None, rdflib.namespace.SDO.identifier)}
    assert identifiers == dois
    apa = ok(idc, "get_citations", {**arguments, "format": "apa"})
    assert apa["idc_acknowledgment"]["doi"] == "10.1148/rg.230180"
    assert all(c["citation"] for c in apa["citations"])


def test_viewer_url_from_a_series_alone(idc: Release, golden) -> None:
    study, series = golden.execute(
        "SELECT StudyInstanceUID, SeriesInstanceUID FROM series WHERE Modality = 'MR' "
        "ORDER BY 2 LIMIT 1"
    ).fetchone()
    alone = ok(idc, "get_viewer_url", {"series_instance_uid": series})
    both = ok(idc, "get_viewer_url", {"study_instance_uid": study, "series_instance_uid": series})
    assert alone == both and alone["study_instance_uid"] == study
    missing = call_tool(idc, "get_viewer_url", {"series_instance_uid": "1.2.3"})
    assert missing["error"]["code"] == "not_found"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_server_routes_to_the_idc_guide(idc: Release) -> None:
    server = build_server(idc)
    async with Client(server) as client:
        guide = (await client.read_resource(IDC_GUIDE_URI)).contents[0].text
        instructions = client.instructions
    assert "seg_index" in guide and "BodyPartExamined" in guide
    assert "seg_index" in instructions and IDC_GUIDE_URI in instructions

"""The README's build over the whole mirror (the default profile): every study, data
dictionary, variable, field, item and index the mirror holds is in the release, counted
against the mirror's own files; the coverage block says what the release holds and
what it lacks; every study a data dictionary names resolves."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import idc_index_data
import pyarrow.parquet as pq

from metabundle.search.release import Release
from metabundle.search.tools import call_tool
from metabundle.sources.dbgap.studies_csv import read_studies_csv
from tests.support.build import Build
from tests.support.cli import run_cli
from tests.support.mirrors import OMITTED_IDC_INDEX

EXPORT = "dbgap/advanced_search/studies.csv"
VARIABLE_TAG = re.compile(rb"<variable[\s>]")
STUDY_ID = re.compile(rb'<data_table[^>]*\bstudy_id="(phs\d{6})\.v\d+"')


def scalar(release: Release, sql: str) -> Any:
    return release.query(sql)[0][0]


def dictionaries(upstream_dir: Path) -> list[Path]:
    studies = upstream_dir / "dbgap" / "studies"
    return sorted(
        p for p in studies.glob("*/*/pheno_variable_summaries/*") if ".data_dict" in p.name
    )


def coverage(release: Release) -> dict[str, Any]:
    return release.manifest["coverage"]


def test_every_study_the_upstream_lists_is_built(
    complete_release: Release, upstream_dir: Path
) -> None:
    export = read_studies_csv(upstream_dir / EXPORT, EXPORT, lambda *_: None)
    on_ftp = {p.name for p in (upstream_dir / "dbgap" / "studies").iterdir()}
    bases = {b for (b,) in complete_release.query("SELECT DISTINCT study_base FROM dbgap_study")}
    assert len(export) == 3264
    assert bases == set(export) | on_ftp
    assert scalar(complete_release, "SELECT count(*) FROM dbgap_unbuilt_study") == 0


def test_every_data_dictionary_and_variable_of_the_mirror_is_built(
    complete_release: Release, upstream_dir: Path
) -> None:
    files = dictionaries(upstream_dir)
    built = {
        name
        for (name,) in complete_release.query(
            "SELECT source_file FROM dbgap_dataset WHERE metadata_source = 'data_dict'"
        )
    }
    assert built == {p.name for p in files}
    expected = sum(len(VARIABLE_TAG.findall(p.read_bytes())) for p in files)
    variables = scalar(
        complete_release,
        "SELECT count(*) FROM dbgap_variable WHERE metadata_source = 'data_dict'",
    )
    assert variables == expected > 130_000


def test_every_study_a_data_dictionary_names_resolves(
    complete_release: Release, upstream_dir: Path
) -> None:
    """The study whose folder holds a dictionary resolves to a version with variables;
    the study a dictionary's ``study_id`` names (sometimes another one) resolves too."""
    folders, named = set(), set()
    for path in dictionaries(upstream_dir):
        folders.add(path.parts[-4])
        match = STUDY_ID.search(path.read_bytes()[:2000])
        named.add(match[1].decode() if match else path.parts[-4])
    assert len(folders) > 150
    for base in sorted(folders | named):
        payload = call_tool(complete_release, "resolve_dbgap_study", {"query": base})
        assert "error" not in payload, (base, payload)
        assert payload["recommended"]["study_id"].startswith(base + "."), base
        if base in folders:
            assert payload["recommended"]["has_variables"] is True, base


def test_the_other_sources_hold_everything_their_files_offer(
    complete_release: Release, upstream_dir: Path
) -> None:
    fields = (upstream_dir / "ukb" / "scdown" / "1.txt").read_text().splitlines()
    assert scalar(complete_release, "SELECT count(*) FROM ukb_field") == len(fields) - 1
    for index, table in (
        ("idc_index", "idc_series"),
        ("prior_versions_index", "idc_prior_version"),
    ):
        path = idc_index_data.INDEX_METADATA[index]["parquet_filepath"]
        assert (
            scalar(complete_release, f"SELECT count(*) FROM {table}")
            == pq.read_metadata(path).num_rows
        )


def test_the_coverage_block_says_what_the_complete_build_holds(
    complete_release: Release,
) -> None:
    block = coverage(complete_release)
    assert block["profile"] == "complete" and block["complete"] is False
    dbgap = block["sources"]["dbgap"]
    assert (dbgap["selection"], dbgap["complete"], dbgap["left_out"]) == ("all", True, [])
    counts = dbgap["counts"]
    assert counts["studies"] == counts["studies_listed_upstream"] == 3264 + 2
    assert counts["studies_with_variables"] + counts["studies_without_variables"] == 3266
    assert counts["variables"] == scalar(complete_release, "SELECT count(*) FROM dbgap_variable")
    assert counts["synthetic_studies"] == 2
    omop = block["sources"]["omop"]
    assert omop["selection"] == "public_subsets" and not omop["complete"]
    assert "--omop-vocab" in omop["left_out"][0]["remedy"]
    by_vocabulary = omop["counts"]["concepts_by_vocabulary"]
    assert sum(by_vocabulary.values()) == omop["counts"]["concepts"]
    idc = block["sources"]["idc"]
    assert "prior_versions_index" in idc["counts"]["indices_loaded"]
    assert "seg_index" in idc["counts"]["indices_loaded"]  # generated, beside the mirror
    assert OMITTED_IDC_INDEX in idc["left_out"][0]["what"]


def test_coverage_is_stated_wherever_the_release_is_read(
    complete_build: Build, complete_release: Release
) -> None:
    info = call_tool(complete_release, "get_release_info", {})
    assert info["coverage"] == coverage(complete_release)
    assert info["sources"]["idc"]["upstream"].startswith("idc-index-data ")
    assert "*" not in (info["sources"]["omop"]["upstream_version"] or "")
    text = run_cli("info", "--release", str(complete_build.release)).stdout
    readme = (complete_build.release / "README.md").read_text()
    metadata = (complete_build.release / "datasette" / "metadata.json").read_text()
    for where in (text, readme, metadata):
        assert "Profile complete" in where
        assert "omop: PARTIAL" in where and "dbgap: complete" in where


def test_a_study_that_does_not_exist_is_not_found_as_unlisted(
    complete_release: Release,
) -> None:
    payload = call_tool(complete_release, "resolve_dbgap_study", {"query": "phs999999"})
    assert payload["error"]["code"] == "not_found"
    assert payload["error"]["details"]["reason"] == "not_listed_upstream"


def test_a_synthetic_study_says_so_and_has_no_dbgap_url(complete_release: Release) -> None:
    payload = call_tool(complete_release, "resolve_dbgap_study", {"query": "phs001986"})
    recommended = payload["recommended"]
    assert recommended["synthetic"] is True and recommended["canonical_url"] is None
    real = call_tool(complete_release, "resolve_dbgap_study", {"query": "phs000179"})
    assert "synthetic" not in real["recommended"]


def test_search_all_keeps_distinct_entities_that_share_a_title(
    complete_release: Release,
) -> None:
    """UK Biobank 21001 and 23104 are both titled "Body mass index (BMI)"; dbGaP's many
    variables of that name do not push the other sources that measure it off the list,
    and Imaging Data Commons, whose collections do not, comes after them."""
    payload = call_tool(complete_release, "search_all", {"query": "body mass index", "limit": 20})
    found = {(item["source"], item["id"]) for item in payload["results"]}
    assert {("ukb", "21001"), ("ukb", "23104")} <= found
    assert {item["source"] for item in payload["results"][:4]} == {"dbgap", "ukb", "aou", "omop"}
    assert "idc" not in {item["source"] for item in payload["results"][:10]}


COHORTS = {
    "Framingham Heart Study": "phs000007",
    "Jackson Heart Study": "phs000286",
    "Multi-Ethnic Study of Atherosclerosis": "phs000209",
    "Atherosclerosis Risk in Communities": "phs000280",
    "Cardiovascular Health Study": "phs000287",
}
"""Full names of cohorts as researchers write them, and the cohort's own accession."""


def test_a_cohort_full_name_resolves_to_the_parent_cohort(complete_release: Release) -> None:
    """Not a TOPMed, BioLINCC, genomics or COVID-19 companion: the cohort the
    sub-studies name as their parent, at its version with the most variables."""
    for name, base in COHORTS.items():
        payload = call_tool(complete_release, "resolve_dbgap_study", {"query": name})
        recommended = payload["recommended"]
        assert recommended["study_id"].startswith(base + "."), (name, recommended["study_id"])
        versions = complete_release.query(
            "SELECT max(variable_count) FROM dbgap_study WHERE study_base = ?", [base]
        )[0][0]
        assert recommended["variable_count"] == versions, name
        if recommended["match"]["reason"] == "parent_of_matches":
            subs = [c for c in payload["candidates"] if c.get("sub_study_of") == base]
            assert len(subs) >= 2, f"{name}: the sub-studies are listed as alternatives"
        else:  # the cohort's own name matched; its companions do not outrank it
            assert recommended["match"]["reason"] == "name", name


def test_another_source_named_as_a_study_points_to_its_tools(complete_release: Release) -> None:
    for name, source, tool in (
        ("UK Biobank", "ukb", "search_ukb_fields"),
        ("Imaging Data Commons", "idc", "search_idc"),
    ):
        payload = call_tool(complete_release, "resolve_dbgap_study", {"query": name})
        details = payload["error"]["details"]
        assert (details["reason"], details["source"], details["tool"]) == (
            "other_source",
            source,
            tool,
        )
        assert tool in payload["error"]["message"]
    # All of Us has a study record in dbGaP by that very name: kept, with the pointer
    payload = call_tool(complete_release, "resolve_dbgap_study", {"query": "All of Us"})
    assert payload["recommended"]["name"] == "All of Us"
    assert any("search_aou_catalog" in w for w in payload["resolution"]["warnings"])

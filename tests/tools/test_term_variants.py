"""Term variants in a built release: the abbreviations its documents spell out and the
spellings its vocabulary holds both of are stored, and every keyword search scores them."""

from __future__ import annotations

from metabundle.search.release import Release
from metabundle.search.tools import call_tool


def variants(release: Release, kind: str) -> set[tuple[str, str]]:
    rows = release.query("SELECT form, variant FROM fts_variant WHERE kind = ?", [kind])
    return {(form, variant) for form, variant in rows}


def test_the_release_stores_the_variants_its_documents_define(release: Release) -> None:
    abbreviations = {(form, variant.lower()) for form, variant in variants(release, "abbreviation")}
    assert ("FEV1", "forced expiratory volume in 1-second") in abbreviations
    assert ("BMI", "body mass index") in abbreviations
    assert all(
        len(form) >= 3 and form.upper() != variant.upper() for form, variant in abbreviations
    )
    assert ("anaemia", "anemia") in variants(release, "spelling")
    assert (release.path / "fts" / "variants.json").exists()


def titles(release: Release, tool: str, query: str, **arguments: object) -> list[str]:
    payload = call_tool(
        release, tool, {"query": query, "method": "keyword", "limit": 50, **arguments}
    )
    assert "error" not in payload, payload
    return [item["title"] for item in payload["results"]]


def test_a_spelled_out_name_finds_what_only_its_abbreviation_names(release: Release) -> None:
    """dbGaP variables say "FEV1" without the words; UK Biobank defines the pair."""
    found = titles(
        release, "search_all", "forced expiratory volume in one second", sources=["dbgap"]
    )
    assert any("FEV1" in t and "forced" not in t.lower() for t in found), found


def test_a_british_spelling_finds_the_american_one(release: Release) -> None:
    found = titles(release, "search_all", "anaemia", sources=["aou"])
    assert any("anemia" in t.lower() for t in found), found

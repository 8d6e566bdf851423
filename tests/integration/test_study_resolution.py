"""Study resolution on the complete mirror build: acronyms that no study name carries
resolve to the study whose own description defines them, an acronym many unrelated
studies define names none of them, and the recommended study's sub-studies are
listed with their relation to it.
"""

from __future__ import annotations

import re

from metabundle.search.release import Release
from metabundle.search.tools import call_tool

DESCRIBED = {
    "BCFR": "phs002835",  # Breast Cancer Family Registry
    "EPGP": "phs000742",  # The Epilepsy Phenome/Genome Project
    "WLS": "phs001157",  # Wisconsin Longitudinal Study on Aging
    "WUCADS": "phs001227",  # Washington University Coronary Artery Disease Study
}
"""Acronyms a study's description defines for it, and the study."""


def resolve(release: Release, query: str) -> dict:
    return call_tool(release, "resolve_dbgap_study", {"query": query, "limit": 20})


def test_an_acronym_only_a_description_defines_resolves_to_that_study(
    complete_release: Release,
) -> None:
    for acronym, base in DESCRIBED.items():
        word = re.compile(rf"(?<![A-Za-z0-9]){re.escape(acronym)}(?![A-Za-z0-9])", re.I)
        names = [n for (n,) in complete_release.query("SELECT DISTINCT name FROM dbgap_study")]
        assert not any(word.search(n) for n in names), f"{acronym} is in a study name"
        (description,) = complete_release.query(
            "SELECT description FROM dbgap_study WHERE study_base = ? AND is_current_version",
            [base],
        )[0]
        assert f"({acronym})" in description
        payload = resolve(complete_release, acronym)
        recommended = payload["recommended"]
        assert recommended["study_id"].split(".")[0] == base, (acronym, recommended)
        assert recommended["match"]["reason"] == "described_acronym"
    # BCFR: another study's description mentions the registry; it is not the registry
    candidates = resolve(complete_release, "BCFR")["candidates"]
    others = [c for c in candidates if not c["study_id"].startswith(DESCRIBED["BCFR"] + ".")]
    assert all(c["match"]["reason"] != "described_acronym" for c in others)


def test_an_acronym_many_unrelated_studies_define_names_none_of_them(
    complete_release: Release,
) -> None:
    defining = complete_release.query(
        "SELECT count(DISTINCT study_base) FROM dbgap_study WHERE description LIKE '%(GWAS)%'"
    )[0][0]
    assert defining > 2
    payload = resolve(complete_release, "GWAS")
    assert all(c["match"]["reason"] != "described_acronym" for c in payload["candidates"])


def test_the_sub_studies_of_a_cohort_are_listed_with_their_relation(
    complete_release: Release,
) -> None:
    payload = resolve(complete_release, "Framingham Heart Study")
    top = payload["recommended"]
    base = top["study_id"].split(".")[0]
    assert base == "phs000007" and top["relation"] == "recommended"
    declared = {
        b
        for (b,) in complete_release.query(
            "SELECT DISTINCT study_base FROM dbgap_study "
            "WHERE split_part(parent_study_accession, '.', 1) = ? AND study_base <> ?",
            [base, base],
        )
    }
    block = payload["sub_studies"]
    assert block["of"] == base and block["total"] == len(declared) > 2
    listed = [item["study_id"].split(".")[0] for item in block["items"]]
    assert set(listed) <= declared and len(listed) == min(len(declared), 10)
    assert all(i["relation"] == "sub_study" and i["sub_study_of"] == base for i in block["items"])
    for candidate in payload["candidates"][1:]:
        if candidate["study_id"].startswith(base + "."):
            assert candidate["relation"] == "other_version"
        elif candidate.get("sub_study_of") == base:
            assert candidate["relation"] == "sub_study"
        else:
            assert candidate["relation"] in ("sibling", "other_study", "parent")
    assert any(c["relation"] == "sub_study" for c in payload["candidates"])

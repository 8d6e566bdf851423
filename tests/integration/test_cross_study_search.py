"""``find_variables_across_studies`` on the complete mirror build: one concept found in
each cohort that holds data dictionaries in the mirror, each study's first variable
checked against its description in the release's own table, opaque variable names
found by their descriptions, the filters, clamps, typed errors, ``low_confidence``,
and the same payload over MCP.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from mcp import Client

from metabundle.mcp.server import build_server
from metabundle.search.release import Release
from metabundle.search.tools import call_tool

TOOL = "find_variables_across_studies"
COHORTS = {
    "phs000007": "Framingham",
    "phs000209": "MESA",
    "phs000286": "JHS",
    "phs000287": "CHS",
    "phs000285": "CARDIA",
    "phs000200": "WHI",
}
"""The cohorts whose data dictionaries the mirror holds (ARIC's it does not)."""
CONCEPTS = {
    "systolic blood pressure": re.compile(r"systolic|\bsbp\b", re.I),
    "body mass index": re.compile(r"body[ -]mass index|\bbmi\b", re.I),
    "current cigarette smoking": re.compile(r"smok|cigarette", re.I),
}
"""A concept, and what the description of a variable measuring it says."""
DESCRIPTION_SQL = "SELECT name, description FROM dbgap_variable WHERE variable_id = ?"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def across(release: Release, **arguments: Any) -> dict[str, Any]:
    return call_tool(release, TOOL, arguments)


def base(group: dict[str, Any]) -> str:
    return group["study"]["base"]


@pytest.mark.parametrize("concept", sorted(CONCEPTS))
def test_a_concept_is_found_in_every_cohort_by_a_variable_that_measures_it(
    complete_release: Release, concept: str
) -> None:
    payload = across(complete_release, query=concept, studies=sorted(COHORTS))
    assert payload["studies_searched"] == len(COHORTS)
    assert sorted(base(g) for g in payload["results"]) == sorted(COHORTS)
    for group in payload["results"]:
        study = group["study"]
        preferred = complete_release.query(
            "SELECT study_accession FROM dbgap_study WHERE study_base = ? "
            "ORDER BY variable_count DESC, is_current_version DESC, version DESC LIMIT 1",
            [study["base"]],
        )[0][0]
        assert study["study_id"] == preferred  # the version with the most variables
        assert study["name"] and study["version"] == int(preferred.split(".")[1][1:])
        first = group["variables"][0]
        assert first["id"].startswith(study["study_id"] + "/")
        _name, description = complete_release.query(DESCRIPTION_SQL, [first["id"]])[0]
        assert CONCEPTS[concept].search(description), (COHORTS[study["base"]], description)
    scores = [g["best_score"] for g in payload["results"]]
    assert scores == sorted(scores, reverse=True)


def test_without_a_study_list_the_cohorts_are_found_among_all_studies(
    complete_release: Release,
) -> None:
    """The mask covers every study with variables, and one large study's many
    matches do not crowd the others out of the ranking."""
    payload = across(complete_release, query="systolic blood pressure", limit=50)
    studies = complete_release.query(
        "SELECT count(DISTINCT study_base) FROM dbgap_study WHERE has_variables"
    )[0][0]
    assert payload["studies_searched"] == studies
    found = {base(g) for g in payload["results"]}
    assert set(COHORTS) <= found
    assert len(found) == len(payload["results"])  # one group per study
    for group in payload["results"]:
        assert 1 <= len(group["variables"]) <= 3
        assert [v["rank"] for v in group["variables"]] == list(
            range(1, len(group["variables"]) + 1)
        )
        per_study = [v["scores"]["score"] for v in group["variables"]]
        assert per_study == sorted(per_study, reverse=True)


def test_an_opaque_variable_name_is_found_by_its_description(complete_release: Release) -> None:
    """Framingham's older exams name variables by form codes (h065, g3a075): the
    smoking questions are found by what their descriptions say."""
    payload = across(
        complete_release, query="current cigarette smoking", studies=["phs000007"], per_study=5
    )
    (group,) = payload["results"]
    opaque = []
    for variable in group["variables"]:
        name, description = complete_release.query(DESCRIPTION_SQL, [variable["id"]])[0]
        assert CONCEPTS["current cigarette smoking"].search(description), description
        if not re.search(r"smok|cig", name, re.I):
            opaque.append(name)
    assert opaque, "every hit's name already said what it measures"
    assert all(re.fullmatch(r"[a-z0-9_]{2,12}", n, re.I) for n in opaque), opaque  # codes


def test_per_study_and_limit_are_clamped(complete_release: Release) -> None:
    many = across(complete_release, query="body mass index", studies=sorted(COHORTS), per_study=99)
    assert max(len(g["variables"]) for g in many["results"]) == 10
    one = across(complete_release, query="body mass index", per_study=0, limit=0)
    assert len(one["results"]) == 1 and len(one["results"][0]["variables"]) == 1
    assert one["truncated"] is True


def test_the_parent_study_filter_keeps_the_study_and_its_declared_sub_studies(
    complete_release: Release,
) -> None:
    payload = across(complete_release, query="systolic blood pressure", parent_study="phs000007")
    family = complete_release.query(
        "SELECT count(DISTINCT study_base) FROM dbgap_study WHERE has_variables AND "
        "(study_base = 'phs000007' OR split_part(parent_study_accession, '.', 1) = 'phs000007')"
    )[0][0]
    assert payload["studies_searched"] == family
    assert {base(g) for g in payload["results"]} == {"phs000007"}
    sub_study = across(complete_release, query="blood pressure", parent_study="phs000363")
    assert sub_study["error"]["code"] == "not_found"  # SABRe: no variables of its own


def test_the_disease_filter_keeps_studies_of_that_focus(complete_release: Release) -> None:
    payload = across(complete_release, query="body mass index", disease="cardiovascular", limit=50)
    ids = [g["study"]["study_id"] for g in payload["results"]]
    focus = dict(
        complete_release.query(
            "SELECT study_accession, diseases FROM dbgap_study WHERE list_contains(?, "
            "study_accession)",
            [ids],
        )
    )
    assert ids and all(any("cardiovascular" in d.lower() for d in focus[i]) for i in ids)
    assert "phs000200" not in {base(g) for g in payload["results"]}  # WHI: women's health
    typo = across(complete_release, query="body mass index", disease="cardiovasculr disease")
    assert typo["error"]["code"] == "not_found"
    assert "Cardiovascular Diseases" in typo["error"]["details"]["suggestions"]


def test_bad_study_lists_get_typed_errors(complete_release: Release) -> None:
    assert across(complete_release, query="bmi", studies=["Framingham"])["error"]["code"] == (
        "invalid_request"
    )
    unknown = across(complete_release, query="bmi", studies=["phs999999"])
    assert unknown["error"]["code"] == "not_found"
    assert unknown["error"]["details"]["study"] == "phs999999"
    without = complete_release.query(
        "SELECT study_accession FROM dbgap_study WHERE NOT has_variables ORDER BY 1 LIMIT 1"
    )[0][0]
    alone = across(complete_release, query="bmi", studies=[without])
    assert alone["error"]["code"] == "not_found"
    assert alone["error"]["details"]["studies_without_variables"] == [without]
    mixed = across(complete_release, query="bmi", studies=[without, "phs000286"])
    assert mixed["studies_without_variables"] == [without]
    assert [base(g) for g in mixed["results"]] == ["phs000286"]


def test_a_meaningless_query_says_low_confidence(complete_release: Release) -> None:
    nonsense = across(complete_release, query="xqzvbnm qwrtplk")
    assert nonsense["retrieval"]["low_confidence"] is True
    assert "low_confidence_rule" in nonsense["retrieval"]
    real = across(complete_release, query="systolic blood pressure", limit=3)
    assert real["retrieval"]["low_confidence"] is False


@pytest.mark.anyio
async def test_the_payload_is_identical_over_mcp(complete_release: Release) -> None:
    arguments = {"query": "body mass index", "studies": sorted(COHORTS), "per_study": 2}
    expected = json.loads(json.dumps(call_tool(complete_release, TOOL, arguments)))
    async with Client(build_server(complete_release)) as client:
        result = await client.call_tool(TOOL, arguments)
    assert not result.is_error
    assert json.loads(result.content[0].text) == expected

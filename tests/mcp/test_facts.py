"""Facts the release holds, through every adapter: dbGaP coded values with their
labels and counts (``get_dbgap_variable``), All of Us items by concept or question
code, Athena URLs on OMOP concepts, ``run_sql`` column errors that name the valid
columns, the advice of ``embedding_search`` without embeddings, and cosine scores
within [-1, 1].

Each is checked in the core's payload against the release's own tables, then the same
call over MCP (in-process client session) and the REST adapter (``POST /-/api``) must
return the identical payload.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from datasette.app import Datasette
from mcp import Client
from mcp.server.mcpserver import MCPServer

from metabundle.index.ann import clip_cosine
from metabundle.search.release import Release
from metabundle.search.services.omop.concepts import ATHENA_TERMS
from metabundle.search.tools import TOOLS, all_tools, call_tool
from tests.support.payloads import json_objects


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope, as the module-scoped datasette fixture needs


SYNTHETIC_CONSENT = "phs001985.v1.p1/phv00427201.v1.p1"  # labels and var_report counts
AREDS_CONSENT = "phs000001.v1.p1/phv00000002.v1.p1"  # labels, no variable report
QUESTION_CODE = "CantAffordCare_DentalCare"
SKIP_ANSWER = "903096"  # PMI: Skip, the answer concept of hundreds of questions
BAD_COLUMN_SQL = "SELECT kind FROM aou_item_identifier"

ADAPTER_CALLS = [
    ("get_dbgap_variable", {"variable_id": SYNTHETIC_CONSENT}),
    ("get_dbgap_variable", {"variable_id": "phv00000002"}),
    ("get_aou_item", {"result_id": QUESTION_CODE}),
    ("get_aou_item", {"result_id": "snomed:49601007"}),
    ("concept_get", {"concept_id": 201826, "max_related": 3}),
    ("concept_ground", {"query": "type 2 diabetes", "limit": 3}),
    ("run_sql", {"sql": BAD_COLUMN_SQL}),
]


@pytest.fixture
def no_embeddings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("METABUNDLE_EMBEDDINGS_ENABLED", "0")
    yield


def core(release: Release, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The core's payload as JSON carries it."""
    return json.loads(json.dumps(call_tool(release, name, arguments)))


async def over_adapters(
    server: MCPServer, datasette: Datasette, name: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The payloads of one call over MCP and over ``POST /-/api/<name>``."""
    async with Client(server) as client:
        result = await client.call_tool(name, arguments)
    response = await datasette.client.post(f"/-/api/{name}", json=arguments)
    mcp_payload = json.loads(result.content[0].text)
    assert result.is_error == ("error" in mcp_payload)
    assert (response.status_code == 200) == ("error" not in response.json())
    return mcp_payload, response.json()


# -- get_dbgap_variable ----------------------------------------------------------------


def test_a_variable_has_its_coded_values_labels_and_counts(release: Release) -> None:
    payload = call_tool(release, "get_dbgap_variable", {"variable_id": SYNTHETIC_CONSENT})
    labels = release.query(
        "SELECT code, label FROM dbgap_variable_value WHERE variable_id = ? ORDER BY value_order",
        [SYNTHETIC_CONSENT],
    )
    counts = dict(
        release.query(
            "SELECT code, count FROM dbgap_variable_value_count WHERE variable_id = ? "
            "AND consent_group = 'total'",
            [SYNTHETIC_CONSENT],
        )
    )
    values = payload["values"]
    assert [(v["code"], v["label"]) for v in values["items"]] == labels and len(labels) >= 2
    assert [v["count"] for v in values["items"]] == [counts[code] for code, _ in labels]
    assert payload["stats"]["available"] is True
    assert sum(v["count"] for v in values["items"]) == payload["stats"]["total"]["n"]
    assert payload["variable"]["id"] == SYNTHETIC_CONSENT
    assert payload["variable"]["synthetic"] is True and payload["canonical_url"] is None
    assert payload["study"]["study_id"] == "phs001985.v1.p1"
    assert payload["dataset"]["dataset_id"].startswith("phs001985.v1.p1/pht")


def test_a_dictionary_variable_has_labels_its_url_and_no_statistics(release: Release) -> None:
    payload = call_tool(release, "get_dbgap_variable", {"variable_id": AREDS_CONSENT})
    (row,) = release.query_dicts(
        "SELECT name, canonical_url, value_count FROM dbgap_variable WHERE variable_id = ?",
        [AREDS_CONSENT],
    )
    assert payload["variable"]["name"] == row["name"]
    assert payload["canonical_url"] == row["canonical_url"]
    assert "variable.cgi" in row["canonical_url"]
    assert payload["values"]["total"] == row["value_count"] == 3
    assert all(v["label"] and v["count"] is None for v in payload["values"]["items"])
    assert payload["stats"]["available"] is False
    for form in ("phv00000002.v1.p1", "PHV00000002", " phv00000002 "):
        again = call_tool(release, "get_dbgap_variable", {"variable_id": form})
        assert again["variable"]["id"] == AREDS_CONSENT, form


def test_every_coded_value_of_sampled_variables_comes_back(release: Release) -> None:
    sample = release.query(
        "SELECT variable_id, count(*) FROM dbgap_variable_value GROUP BY 1 ORDER BY 1 LIMIT 25"
    )
    for variable_id, count in sample:
        payload = call_tool(release, "get_dbgap_variable", {"variable_id": variable_id})
        assert payload["values"]["total"] >= count, variable_id
        assert all(item["label"] is not None for item in payload["values"]["items"])


@pytest.mark.parametrize(
    ("variable_id", "code"),
    [("bogus", "invalid_request"), ("phs000001/phv1", "invalid_request")],
)
def test_a_malformed_variable_id_is_refused_by_name(
    release: Release, variable_id: str, code: str
) -> None:
    error = call_tool(release, "get_dbgap_variable", {"variable_id": variable_id})["error"]
    assert error["code"] == code and "variable_id" in error["message"]


def test_an_unknown_variable_is_not_found_and_says_the_release_is_partial(
    release: Release,
) -> None:
    error = call_tool(release, "get_dbgap_variable", {"variable_id": "phv99999999"})["error"]
    assert error["code"] == "not_found"
    assert error["details"]["reason"] == "release_partial"


# -- get_aou_item by identifiers --------------------------------------------------------


def test_an_item_is_found_by_its_question_code_and_concept_id(release: Release) -> None:
    (row,) = release.query_dicts(
        "SELECT result_id, concept_id FROM aou_item WHERE kind = 'question' AND concept_code = ?",
        [QUESTION_CODE],
    )
    for identifier in (QUESTION_CODE, str(row["concept_id"]), QUESTION_CODE.lower()):
        payload = call_tool(release, "get_aou_item", {"result_id": identifier})
        assert payload["item"]["result_id"] == row["result_id"], identifier
        assert payload["resolution"]["identifier"] == identifier
    by_id = call_tool(release, "get_aou_item", {"result_id": row["result_id"]})
    assert "resolution" not in by_id
    by_code = call_tool(release, "get_aou_item", {"result_id": QUESTION_CODE})
    assert {k: v for k, v in by_code.items() if k != "resolution"} == by_id


def test_an_ehr_concept_is_found_by_id_code_and_vocabulary_code(release: Release) -> None:
    result_ids = {
        call_tool(release, "get_aou_item", {"result_id": identifier})["item"]["result_id"]
        for identifier in ("134057", "49601007", "snomed:49601007")
    }
    assert result_ids == {"aou.doc.0028bc26a826c5445407e647"}


def test_a_shared_identifier_prefers_a_variable_and_lists_alternatives(
    release: Release,
) -> None:
    payload = call_tool(release, "get_aou_item", {"result_id": SKIP_ANSWER})
    resolution = payload["resolution"]
    assert resolution["items_matched"] > 100 and resolution["alternatives_truncated"] is True
    assert len(resolution["alternatives"]) == 10
    kinds = {
        r[0]
        for r in release.query(
            "SELECT a.kind FROM aou_item_identifier i JOIN aou_item a USING (result_id) "
            "WHERE i.normalized = ?",
            [SKIP_ANSWER],
        )
    }
    if kinds - {"answer"}:
        assert payload["item"]["kind"] != "answer"


# -- Athena URLs -----------------------------------------------------------------------


def concept_nodes(payload: Any) -> Iterator[dict[str, Any]]:
    """Every object of a payload that carries a concept id."""
    for node in json_objects(payload):
        if isinstance(node.get("concept_id"), int) or isinstance(
            node.get("source_concept_id"), int
        ):
            yield node


OMOP_CALLS = [
    ("concept_search_exact", {"query": "Type 2 diabetes mellitus"}),
    ("concept_search_fulltext", {"query": "diabetes", "limit": 5}),
    ("concept_navigate_to_standard", {"concept_ids": [8481, 201826]}),
    ("concept_map_to_standard", {"vocabulary_id": "SNOMED", "concept_code": "44054006"}),
    ("embedding_search", {"query": "heart attack", "limit": 5}),
    ("concept_ground", {"query": "high blood sugar", "limit": 5}),
    ("concept_get", {"concept_id": 201826, "max_related": 5}),
    ("concept_ancestors", {"concept_id": 201826}),
    ("concept_descendants", {"concept_id": 201826, "limit": 5}),
    ("concept_relationships", {"concept_id": 201826, "limit": 5}),
    ("concept_path", {"source_id": 201826, "target_id": 4001336, "within_domain": False}),
    ("concept_by_code", {"vocabulary_id": "SNOMED", "concept_code": "44054006"}),
    ("concept_nearest_standard_ancestor", {"concept_id": 35208414}),
    (
        "concept_set_resolve",
        {
            "expression": {
                "items": [{"concept": {"CONCEPT_ID": 201826}, "includeDescendants": True}]
            }
        },
    ),
    ("embedding_neighbours", {"concept_id": 201826, "limit": 5}),
    ("concept_crosswalk", {"concept_id": 201826, "limit": 5}),
]


def test_the_calls_cover_every_omop_tool() -> None:
    assert {name for name, _ in OMOP_CALLS} == {s.name for s in all_tools() if s.group == "omop"}


@pytest.mark.parametrize(("name", "arguments"), OMOP_CALLS)
def test_every_omop_concept_carries_its_athena_url(
    release: Release, name: str, arguments: dict[str, Any]
) -> None:
    payload = call_tool(release, name, arguments)
    assert "error" not in payload, payload
    nodes = list(concept_nodes(payload))
    assert nodes, name
    for node in nodes:
        if "source_concept_id" in node:
            assert node["source_athena_url"] == f"{ATHENA_TERMS}{node['source_concept_id']}"
        if "concept_id" in node:
            assert node["athena_url"] == f"{ATHENA_TERMS}{node['concept_id']}", (name, node)


# -- run_sql column errors ------------------------------------------------------------


def test_a_column_error_names_the_valid_columns(release: Release) -> None:
    error = call_tool(release, "run_sql", {"sql": BAD_COLUMN_SQL})["error"]
    schema = call_tool(release, "get_table_schema", {"table": "aou_item_identifier"})
    names = [column["name"] for column in schema["columns"]]
    assert error["code"] == "sql_error" and "kind" in error["message"]
    assert error["details"]["columns"] == {"aou_item_identifier": names}
    assert all(name in error["message"] for name in names)
    joined = call_tool(
        release,
        "run_sql",
        {"sql": "SELECT i.nope FROM ukb_field f JOIN aou_item i ON TRUE LIMIT 1"},
    )["error"]
    assert set(joined["details"]["columns"]) == {"ukb_field", "aou_item"}


def test_other_sql_errors_are_unchanged(release: Release) -> None:
    error = call_tool(release, "run_sql", {"sql": "SELECT * FROM nowhere"})["error"]
    assert error["code"] == "sql_error" and "details" not in error


# -- embeddings off ----------------------------------------------------------------------


@pytest.mark.usefixtures("no_embeddings")
def test_embedding_search_without_embeddings_suggests_a_tool_that_exists(
    release: Release,
) -> None:
    error = call_tool(release, "embedding_search", {"query": "heart attack"})["error"]
    assert error["code"] == "embeddings_unavailable"
    assert "method=" not in error["message"]
    assert "method" not in TOOLS["embedding_search"].params.model_fields
    instead = error["details"]["use_instead"]
    assert instead in TOOLS and instead in error["message"]
    assert "error" not in call_tool(release, instead, {"query": "heart attack"})


# -- cosine ----------------------------------------------------------------------------


def test_cosine_scores_are_clipped() -> None:
    scores = clip_cosine(np.array([1.000021, -1.00002, 0.5], dtype=np.float64))
    assert scores.tolist() == [1.0, -1.0, 0.5] and scores.dtype == np.float32


def test_semantic_scores_of_self_matches_stay_within_one(release: Release) -> None:
    for source in ("dbgap", "ukb", "aou", "omop", "idc"):
        titles = release.query(
            "SELECT title FROM search_doc WHERE source = ? ORDER BY docno LIMIT 5", [source]
        )
        for (title,) in titles:
            payload = call_tool(
                release,
                "search_all",
                {"query": title[:200], "method": "semantic", "sources": [source], "limit": 3},
            )
            for item in payload["results"]:
                assert -1.0 <= item["scores"]["semantic"] <= 1.0, (source, title)


# -- every adapter ---------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(("name", "arguments"), ADAPTER_CALLS)
async def test_the_facts_are_identical_over_mcp_and_rest(
    server: MCPServer,
    datasette: Datasette,
    release: Release,
    name: str,
    arguments: dict[str, Any],
) -> None:
    expected = core(release, name, arguments)
    mcp_payload, rest_payload = await over_adapters(server, datasette, name, arguments)
    assert mcp_payload == expected
    assert rest_payload == expected


@pytest.mark.anyio
@pytest.mark.usefixtures("no_embeddings")
async def test_the_embeddings_advice_is_identical_over_mcp_and_rest(
    server: MCPServer, datasette: Datasette, release: Release
) -> None:
    arguments = {"query": "heart attack"}
    expected = core(release, "embedding_search", arguments)
    assert expected["error"]["details"]["use_instead"] == "concept_search_fulltext"
    mcp_payload, rest_payload = await over_adapters(
        server, datasette, "embedding_search", arguments
    )
    assert mcp_payload == expected == rest_payload

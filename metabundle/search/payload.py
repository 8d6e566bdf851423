"""The response models' base and the blocks several tools' payloads share.

Every registered tool returns an instance of its response model (a subclass of
:class:`ResponseModel`); the registry turns it into the JSON payload that the CLI, the
MCP server and the REST API return (:func:`to_payload`). A model forbids fields it does
not declare, so the model is the payload's exact description, and the OpenAPI
document's response schemas are generated from it.

A payload holds the keys its tool set and only those (``exclude_unset``): an optional
key a tool leaves out is absent, not ``null``. Fields are declared in the order the
payload lists them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, JsonValue

JsonObject = dict[str, JsonValue]
"""An object whose keys come from the data (a table row, a filter, an index's columns)."""


class ResponseModel(BaseModel):
    """A tool's payload or a part of one: every key declared, nothing else allowed."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


def to_payload(model: ResponseModel) -> dict[str, Any]:
    """The JSON payload of ``model``: the keys that were set, in declaration order."""
    return model.model_dump(mode="json", exclude_unset=True)


class Clamped(ResponseModel):
    """A parameter outside its range that was moved into it rather than refused
    (``requested`` was asked, ``used`` was used), listed under an answer's ``clamped``
    key by the registry: an answer to another question than the one asked."""

    parameter: str
    requested: int
    used: int
    message: str


class Retrieval(ResponseModel):
    """The ``retrieval`` block of every search answer: how the answer was ranked
    (:class:`metabundle.search.retrieval.Retrieval`)."""

    low_confidence: bool
    low_confidence_rule: str | None = None
    method: str
    effective_method: str
    policy: str
    embedding_provider: str | None
    embedding_model: str | None
    weights: JsonObject | None
    degraded: bool
    degraded_reason: str | None
    candidates: dict[str, int]
    scores_calibrated: bool
    explain: JsonObject | None = None
    merge: str | None = None


class HitScores(ResponseModel):
    """A hit's scores (:meth:`metabundle.search.retrieval.Hit.scores`)."""

    score: float
    keyword: float | None
    semantic: float | None
    exact_match: bool


SNIPPET_CHARS = 200
OPTIONAL_RESULT_KEYS = ("parent_id", "study_id", "domain", "vocabulary", "variable_type", "role")


class SearchResult(ResponseModel):
    """A search document as a result, in the shape the cross-source tools share."""

    rank: int
    source: str
    kind: str
    id: str
    doc_id: str
    title: str
    snippet: str
    canonical_url: str | None
    parent_id: str | None = None
    study_id: str | None = None
    domain: str | None = None
    vocabulary: str | None = None
    variable_type: str | None = None
    role: str | None = None
    scores: HitScores
    versions_collapsed: int | None = None


def search_result(position: int, row: dict[str, Any], scores: dict[str, Any]) -> SearchResult:
    """The result for the ``search_doc`` row ``row`` at rank ``position``."""
    body = row.get("body") or ""
    snippet = body if len(body) <= SNIPPET_CHARS else body[: SNIPPET_CHARS - 1] + "…"
    optional = {key: row[key] for key in OPTIONAL_RESULT_KEYS if row.get(key) is not None}
    return SearchResult(
        rank=position,
        source=row["source"],
        kind=row["kind"],
        id=row["entity_id"],
        doc_id=row["doc_id"],
        title=row["title"],
        snippet=snippet,
        canonical_url=row["canonical_url"],
        **optional,
        scores=HitScores(**scores),
    )

"""Participant counts from the public Data Browser API, when a build may ask it.

A build from the public upstream asks ``https://public.api.researchallofus.org``; a
build from a mirror is offline and asks nothing, unless ``METABUNDLE_AOU_API`` names
an API base to ask. The responses are recorded as raw inputs of the snapshot
(``aou/public-api/...json``) so that the parse step reads counts from files like every
other input. Only GET endpoints declared in the OpenAPI file are used.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from metabundle.errors import FetchError, ParseError
from metabundle.sources.aou.catalog import API_PREFIX, PUBLIC_API
from metabundle.sources.aou.settings import AouSettings
from metabundle.sources.base import FetchContext, RawFile, RawSnapshot

NAME = "aou"
DOMAIN_TOTALS = "domain-totals"
SURVEY_QUESTIONS = "survey-questions"
CDR_VERSION = "cdrversion-used"
ENDPOINTS = (DOMAIN_TOTALS, SURVEY_QUESTIONS, CDR_VERSION)
"""Endpoints the build calls; parse checks the OpenAPI file still declares them."""

OPENAPI = "aou/data-browser/public-api.yaml"
OPENAPI_PATH = "public-api/src/main/resources/public-api.yaml"
"""Mirror path and repository path of the API's OpenAPI (Swagger 2) description."""
DECLARED_PATH = re.compile(r"^  (/v1/[^:\s]+):", re.MULTILINE)

FROM_API = "from_public_api"
OFFLINE = "unavailable_offline"
UNREACHABLE = "api_unreachable"
NOT_COLLECTED = "not_collected"


def check_openapi(snapshot: RawSnapshot) -> None:
    """The OpenAPI file must still declare every endpoint the build calls."""
    text = snapshot.file(OPENAPI).path.read_text(encoding="utf-8", errors="replace")
    declared = set(DECLARED_PATH.findall(text))
    missing = [e for e in ENDPOINTS if f"{API_PREFIX}/{e}" not in declared]
    if missing:
        raise ParseError(NAME, OPENAPI, f"the API no longer declares {API_PREFIX}/{missing[0]}")


def api_base(ctx: FetchContext) -> str | None:
    """The API to ask: ``METABUNDLE_AOU_API``, else the public API unless offline."""
    configured = AouSettings.load().aou_api
    if configured is not None:
        return configured.rstrip("/")
    return None if ctx.upstream.is_mirror else PUBLIC_API


def response_key(endpoint: str, query: dict[str, int] | None = None) -> str:
    """Snapshot key of one API response, e.g. aou/public-api/survey-questions/1585855.json."""
    suffix = "".join(f"/{value}" for _, value in sorted((query or {}).items()))
    return f"aou/public-api/{endpoint}{suffix}.json"


def _get(ctx: FetchContext, base: str, endpoint: str, query: dict[str, int] | None = None) -> Path:
    url = f"{base}{API_PREFIX}/{endpoint}" + (f"?{urlencode(query)}" if query else "")
    fetched = ctx.fetcher.fetch(url)
    ctx.files.append(
        RawFile(
            response_key(endpoint, query),
            url,
            fetched.path,
            fetched.sha256,
            fetched.size,
            fetched.fetched_at,
            fetched.reused,
        )
    )
    return fetched.path


def fetch_counts(ctx: FetchContext) -> dict[str, Any]:
    """Ask the API for domain, module and question counts; say how that went."""
    base = api_base(ctx)
    if base is None:
        return {"status": OFFLINE}
    try:
        totals = _get(ctx, base, DOMAIN_TOTALS)
    except FetchError as error:
        ctx.report(f"public Data Browser API not reachable ({error}); counts left null")
        return {"base": base, "status": UNREACHABLE, "error": str(error)}
    key = response_key(DOMAIN_TOTALS)
    for module in _field(_read_json(totals, key), "surveyModules", key):
        module_id = _integer(module, "conceptId", key)
        _get(ctx, base, SURVEY_QUESTIONS, {"survey_concept_id": module_id})
    cdr = _read_json(_get(ctx, base, CDR_VERSION), response_key(CDR_VERSION))
    return {"base": base, "status": FROM_API, "cdr_version": cdr.get("name")}


def _read_json(path: Path, key: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ParseError(NAME, key, f"not JSON ({error})") from None


@dataclass(frozen=True)
class ApiCount:
    """A participant count the API gave for one item: a domain by its display name, a
    module or question by its concept id."""

    kind: str
    native_id: str
    participant_count: int
    endpoint: str


def _field(record: dict[str, Any], name: str, key: str) -> Any:
    if not isinstance(record, dict) or name not in record:
        raise ParseError(NAME, key, f"a record lacks {name!r}")
    return record[name]


def _integer(record: dict[str, Any], name: str, key: str) -> int:
    value = _field(record, name, key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParseError(NAME, key, f"{name} is {value!r}, not an integer")
    return value


def read_counts(snapshot: RawSnapshot) -> list[ApiCount]:
    """Counts in the snapshot's API responses (none unless the API answered)."""
    if snapshot.details.get("api", {}).get("status") != FROM_API:
        return []
    key = response_key(DOMAIN_TOTALS)
    totals = _read_json(snapshot.file(key).path, key)
    endpoint = f"{API_PREFIX}/{DOMAIN_TOTALS}"
    counts = [
        ApiCount("domain", _field(d, "name", key), _integer(d, "participantCount", key), endpoint)
        for d in _field(totals, "domainInfos", key)
    ]
    for module in _field(totals, "surveyModules", key):
        module_id = _integer(module, "conceptId", key)
        count = _integer(module, "participantCount", key)
        counts.append(ApiCount("survey_module", str(module_id), count, endpoint))
        counts += _question_counts(snapshot, module_id)
    return counts


def _question_counts(snapshot: RawSnapshot, module_id: int) -> list[ApiCount]:
    """Counts of a module's top-level questions (the endpoint lists no sub-questions)."""
    key = response_key(SURVEY_QUESTIONS, {"survey_concept_id": module_id})
    response = _read_json(snapshot.file(key).path, key)
    endpoint = f"{API_PREFIX}/{SURVEY_QUESTIONS}?survey_concept_id={module_id}"
    counts = []
    for item in _field(_field(response, "questions", key), "items", key):
        concept_id = _integer(item, "conceptId", key)
        top_level = item.get("type") == "QUESTION" and item.get("path") == str(concept_id)
        if top_level and item.get("countValue") is not None:
            counts.append(
                ApiCount("question", str(concept_id), _integer(item, "countValue", key), endpoint)
            )
    return counts

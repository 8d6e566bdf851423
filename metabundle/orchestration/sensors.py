"""Sensors that notice new upstream versions and request a rebuild of that source only,
one per source whose spec offers an upstream probe (``SourceSpec.probe``).

Each sensor runs its source's cheap *probe*, which returns a few version tokens; the
tokens are the sensor's cursor (JSON). The first tick records them; a later tick whose
tokens differ requests a ``build_and_publish`` run of the changed source (and the
sources that depend on it) and records the new tokens. A probe that fails (upstream
down) skips the tick and keeps the cursor, so the change is seen on a later tick. The
probes live with their sources: Imaging Data Commons watches the installed
``idc-index-data`` data version, UK Biobank its Showcase schemas (revalidated through
the download cache), dbGaP its study list.

Sensors start stopped; turn them on in the UI or with ``dagster sensor start``.
"""

from __future__ import annotations

import json

from dagster import SensorDefinition, SensorEvaluationContext, SensorResult, sensor

from metabundle.digest import digest_of
from metabundle.errors import MetabundleError
from metabundle.orchestration.jobs import BUILD_AND_PUBLISH, rebuild_request
from metabundle.orchestration.resources import BuildConfig
from metabundle.sources.base import SourceSpec, Tokens
from metabundle.sources.registry import SOURCES
from metabundle.sources.steps import probe_source

# -- sensors ------------------------------------------------------------------------------


def changed_tokens(previous: Tokens, seen: Tokens) -> list[str]:
    """Names of the tokens that differ."""
    return sorted(k for k in previous.keys() | seen.keys() if previous.get(k) != seen.get(k))


def upstream_sensor(spec: SourceSpec) -> SensorDefinition:
    """A sensor that rebuilds ``spec``'s source when its probe's tokens change."""
    assert spec.probe is not None
    source = spec.name

    @sensor(
        name=f"{source}_upstream",
        job_name=BUILD_AND_PUBLISH,
        minimum_interval_seconds=spec.probe.interval_s,
        description=f"Requests a rebuild of {source} alone when {spec.probe.what} changes.",
    )
    def _sensor(context: SensorEvaluationContext, build_config: BuildConfig) -> SensorResult:
        settings = build_config.settings()
        if source not in settings.sources:
            return SensorResult(skip_reason=f"{source} is not among the configured sources")
        try:
            seen = probe_source(source, settings)
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
            run_key=f"{source}:{digest_of([cursor])}",
        )
        return SensorResult(run_requests=[request], cursor=cursor)

    return _sensor


def upstream_sensors() -> list[SensorDefinition]:
    """One sensor per source with an upstream probe, in registry order."""
    return [upstream_sensor(spec) for spec in SOURCES.values() if spec.probe is not None]

"""The ``build_and_publish`` job and the run requests that schedules and sensors send it.

The job selects every asset of the configured sources (``METABUNDLE_SOURCES``), the
search and release steps, and ``published_release``. A run request may select less:
a sensor that saw one source change asks for that source (and the sources that
depend on it) plus the search and release steps; the other sources' latest parsed
tables are reused from ``<out>/work/sources/``. Publishing is selected only when
``METABUNDLE_PUBLISH_TO`` is set.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dagster import RunRequest, define_asset_job

from metabundle.config import BuildSettings
from metabundle.orchestration.selection import selection
from metabundle.release.publish import configured_target
from metabundle.sources.registry import with_dependencies

BUILD_AND_PUBLISH = "build_and_publish"
SOURCES_TAG = "metabundle/sources"
REASON_TAG = "metabundle/reason"


def affected_sources(changed: Iterable[str], configured: tuple[str, ...]) -> tuple[str, ...]:
    """The configured sources to rebuild when ``changed`` changed: those sources and
    every configured source that depends on one of them, in build order."""
    changed = set(changed)
    hit = [s for s in configured if changed & set(with_dependencies((s,)))]
    return with_dependencies(tuple(hit)) if hit else ()


def build_and_publish_job(settings: BuildSettings) -> Any:  # dagster exports no name for it
    """Every configured source → search → release → publish."""
    return define_asset_job(
        BUILD_AND_PUBLISH,
        selection=selection(with_dependencies(settings.sources), publish=True),
        description="Fetch, parse and index the configured sources, write a release (or "
        "find the current one up to date) and publish it to METABUNDLE_PUBLISH_TO.",
    )


def rebuild_request(
    changed: Iterable[str], settings: BuildSettings, *, reason: str, run_key: str | None = None
) -> RunRequest:
    """A run of ``build_and_publish`` limited to the sources affected by ``changed``."""
    sources = affected_sources(changed, with_dependencies(settings.sources))
    return RunRequest(
        run_key=run_key,
        job_name=BUILD_AND_PUBLISH,
        asset_selection=selection(sources, publish=configured_target() is not None),
        tags={SOURCES_TAG: ",".join(sources), REASON_TAG: reason[:200]},
    )

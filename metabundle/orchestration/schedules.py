"""The weekly release schedule: a full ``build_and_publish`` run.

Unchanged inputs make it cheap: downloads are revalidated, parses, embeddings and
indexes come from the cache, the current release is reported up to date instead of
being rewritten, and publishing an already published version is a no-op. The cron
expression is ``METABUNDLE_RELEASE_CRON`` (default Mondays 04:00 UTC).
"""

from __future__ import annotations

from dagster import (
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    schedule,
)

from metabundle.config import BuildSettings
from metabundle.orchestration.jobs import BUILD_AND_PUBLISH, rebuild_request
from metabundle.orchestration.resources import BuildConfig

WEEKLY_RELEASE = "weekly_release"


def weekly_release_schedule() -> ScheduleDefinition:
    """The schedule (stopped until turned on in the UI or with ``dagster schedule start``)."""

    @schedule(
        name=WEEKLY_RELEASE,
        cron_schedule=BuildSettings.load().release_cron,
        job_name=BUILD_AND_PUBLISH,
        execution_timezone="UTC",
        description="Rebuild every configured source and publish the release weekly.",
    )
    def weekly_release(context: ScheduleEvaluationContext, build_config: BuildConfig) -> RunRequest:
        settings = build_config.settings()
        return rebuild_request(settings.sources, settings, reason="weekly release")

    return weekly_release

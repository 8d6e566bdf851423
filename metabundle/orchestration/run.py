"""Run the pipeline in-process for ``metabundle build`` (Dagster ``materialize``), or
as a job for other executors (:func:`release_build_job`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Protocol

from dagster import (
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    Definitions,
    ExecuteInProcessResult,
    JobDefinition,
    define_asset_job,
    materialize,
)

from metabundle.config import BuildSettings
from metabundle.errors import MetabundleError
from metabundle.orchestration.definitions import all_assets, resources_for
from metabundle.orchestration.home import ensure_dagster_home
from metabundle.orchestration.progress import Progress
from metabundle.orchestration.selection import selection
from metabundle.sources.registry import with_dependencies


class ErrorChain(Protocol):
    """What a step failure's error (Dagster's serialized exception) tells of each link of
    its chain; only these attributes are read."""

    cls_name: str
    message: str
    cause: ErrorChain | None
    context: ErrorChain | None


USER_ERRORS = {
    "MetabundleError",
    "ConfigError",
    "FetchError",
    "ParseError",
    "SchemaError",
    "ReleaseError",
    "EmbeddingsUnavailable",
}


class BuildFailed(MetabundleError):
    """A build step failed; the message is that step's one-sentence error."""


def selection_for(settings: BuildSettings) -> list[AssetKey]:
    """The assets a build of ``settings.sources`` materializes."""
    return selection(with_dependencies(settings.sources))


def release_build_job() -> JobDefinition:
    """The build of the sources configured by ``METABUNDLE_*`` variables, as a job.

    For executors that run steps in other processes or pods, which rebuild the job by
    calling this function: ``execute_job(reconstructable(release_build_job), instance)``
    runs each step, and each embedding shard, in a process of its own.
    """
    settings = BuildSettings.load()
    job = define_asset_job("release_build", selection=selection_for(settings))
    definitions = Definitions(assets=all_assets(), jobs=[job], resources=resources_for(None))
    return definitions.resolve_job_def("release_build")


def run_build(settings: BuildSettings, progress: Progress) -> Path:
    """Materialize the selected sources and the release; the new release's path."""
    ensure_dagster_home(settings.out_dir)
    started = time.perf_counter()
    with DagsterInstance.get() as instance:
        result = materialize(
            all_assets(),
            selection=selection_for(settings),
            resources=resources_for(settings, progress),
            instance=instance,
            raise_on_error=False,
            # Failures reach the user as one sentence (failure_message), not Dagster's log.
            run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}},
            tags={"metabundle/sources": ",".join(settings.sources)},
        )
    progress.write(settings.work_dir / "build_report.json")
    if not result.success:
        raise BuildFailed(failure_message(result))
    for line in summary_lines(progress.report(), time.perf_counter() - started):
        progress.message("summary", line)
    return Path(result.output_for_node("release"))


def summary_lines(report: dict[str, dict[str, Any]], seconds: float) -> list[str]:
    """What each step took (time, peak memory) and what it reused, for the end of
    ``metabundle build``."""
    release = report.get("release", {}).get("reused", {})
    if release.get("release"):
        outcome = f"release {release.get('version')} is up to date (inputs unchanged)"
    else:
        outcome = f"release {release.get('version', '?')} written"
    lines = [f"{seconds:.1f}s in all; {outcome}"]
    for step, record in report.items():
        peak = record.get("peak_rss_mib")
        memory = f"{peak:>7,} MiB" if peak is not None else " " * 11
        lines.append(
            f"{step:<16} {record['seconds']:>7.1f}s {memory}  {_reuse_text(step, record['reused'])}"
        )
    return lines


def _reuse_text(step: str, reused: dict[str, Any]) -> str:
    """One phrase saying what a step reused from earlier builds."""
    if step.startswith("raw_"):
        unchanged, files = reused.get("unchanged", 0), reused.get("files", 0)
        return f"{unchanged} of {files} files unchanged since the last build"
    if step.startswith("core_"):
        return "parse reused (inputs unchanged)" if reused.get("parse") else "parsed"
    if step == "embeddings" and not reused.get("embeddings") and "requested" in reused:
        return (
            f"{reused['requested']:,} texts: {reused.get('cached', 0):,} from the embedding "
            f"cache, {reused.get('embedded', 0):,} embedded"
        )
    if step == "release":
        return "up to date, nothing written" if reused.get("release") else "written"
    flags = [value for value in reused.values() if isinstance(value, bool)]
    if not flags:
        return ""
    return "reused (inputs unchanged)" if all(flags) else "rebuilt"


def _user_message(error: ErrorChain | None) -> str | None:
    """The message of the first metabundle error in a Dagster error chain."""
    while error is not None:
        if error.cls_name in USER_ERRORS:
            return error.message.split(": ", 1)[-1].strip()
        error = error.cause or error.context
    return None


def _cause(error: ErrorChain | None) -> str:
    """The first line (``module.Class: message``, as Python shows it) of the first error
    in a Dagster error chain that is not Dagster's own: its wrapper says only that an op
    failed."""
    while error is not None and error.cls_name.startswith("Dagster"):
        error = error.cause or error.context
    if error is None:
        return "unknown error"
    lines = error.message.strip().splitlines()
    return lines[0] if lines else error.cls_name


def failure_message(result: ExecuteInProcessResult) -> str:
    """One sentence saying which step failed and why."""
    for event in result.all_events:
        if event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.event_specific_data
            if evaluation is not None and not evaluation.passed:  # type: ignore[union-attr]
                key = evaluation.asset_check_key  # type: ignore[union-attr]
                details = ", ".join(
                    f"{k}={v.value}"
                    for k, v in evaluation.metadata.items()  # type: ignore[union-attr]
                )
                return (
                    f"Check {key.name} failed on table {key.asset_key.to_user_string()} "
                    f"({details}); no release was written"
                )
    for event in result.all_events:
        if event.event_type == DagsterEventType.STEP_FAILURE:
            error = event.step_failure_data.error  # type: ignore[union-attr]
            message = _user_message(error)
            step = event.step_key or "a step"
            if message is not None:
                return message
            return f"Build step {step} failed unexpectedly: {_cause(error)}"
    return "The build failed; see the Dagster event log for details"

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
from metabundle.orchestration.progress import SHARD_STEP_PREFIX, Progress
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
    seconds = time.perf_counter() - started
    report_path = settings.work_dir / "build_report.json"
    if not result.success:
        progress.write(report_path, seconds)
        raise BuildFailed(failure_message(result))
    lines = summary_lines(progress.report(), seconds)
    progress.write(report_path, seconds, lines)
    for line in lines:
        progress.message("summary", line)
    return Path(result.output_for_node("release"))


STEP_WIDTH = 16
"""The width of the summary's step column (longer names widen it)."""
UNTIMED_STEP = "between steps"
UNTIMED_TEXT = "Dagster starting the run and handing each step's results to the next"
"""The summary line of the time outside every step."""


def summary_lines(report: dict[str, dict[str, Any]], seconds: float) -> list[str]:
    """What each step took (time, peak memory) and what it reused, for the end of
    ``metabundle build``: one line per step, the embedding shards added up in one line
    (with their rate), and the time no step accounts for (Dagster's own work between
    steps), so that the lines add up to the build's ``seconds``."""
    release = report.get("release", {}).get("reused", {})
    if release.get("release"):
        outcome = f"release {release.get('version')} is up to date (inputs unchanged)"
    else:
        outcome = f"release {release.get('version', '?')} written"
    rows: list[tuple[str, float, int | None, str]] = []
    shards = {s: r for s, r in report.items() if s.startswith(SHARD_STEP_PREFIX)}
    for step, record in report.items():
        if step in shards:
            if step == next(iter(shards)):
                rows.append(_shards_row(list(shards.values())))
            continue
        text = _reuse_text(step, record["reused"])
        rows.append((step, record["seconds"], record.get("peak_rss_mib"), text))
    untimed = seconds - sum(row[1] for row in rows)
    if untimed >= 0.05:
        rows.append((UNTIMED_STEP, untimed, None, UNTIMED_TEXT))
    width = max([STEP_WIDTH, *(len(row[0]) for row in rows)])
    lines = [f"{seconds:.1f}s in all; {outcome}"]
    for step, took, peak, text in rows:
        memory = f"{peak:>7,} MiB" if peak is not None else " " * 11
        lines.append(f"{step:<{width}} {took:>7.1f}s {memory}  {text}".rstrip())
    return lines


def _shards_row(records: list[dict[str, Any]]) -> tuple[str, float, int | None, str]:
    """The summary row of every embedding shard together: their time, the most memory
    one held, how many texts they embedded and found cached, and the rate."""
    took = sum(record["seconds"] for record in records)
    peaks = [r["peak_rss_mib"] for r in records if r.get("peak_rss_mib") is not None]
    embedded = sum(record["reused"].get("embedded", 0) for record in records)
    cached = sum(record["reused"].get("cached", 0) for record in records)
    count = len(records)
    step = f"embed ({count:,} shard{'' if count == 1 else 's'})"
    if embedded:
        rate = embedded / took if took > 0 else 0.0
        shown = f"{rate:,.1f}" if rate < 10 else f"{rate:,.0f}"
        text = f"{embedded:,} texts embedded, {cached:,} from the embedding cache, {shown} texts/s"
    else:
        text = f"all {cached:,} texts already in the embedding cache"
    return step, took, max(peaks, default=None), text


def _reuse_text(step: str, reused: dict[str, Any]) -> str:
    """One phrase saying what a step did or reused from earlier builds (the texts are
    embedded by the shards, so the ``embeddings`` step only reads their vectors)."""
    if step.startswith("raw_"):
        unchanged, files = reused.get("unchanged", 0), reused.get("files", 0)
        return f"{unchanged} of {files} files unchanged since the last build"
    if step.startswith("core_"):
        return "parse reused (inputs unchanged)" if reused.get("parse") else "parsed"
    if step == "embedding_shards":
        count, texts = reused.get("shards", 0), reused.get("texts", 0)
        if not count:
            return "nothing to embed"
        return f"{texts:,} distinct texts in {count:,} shard{'' if count == 1 else 's'}"
    if step == "embeddings" and not reused.get("embeddings") and "requested" in reused:
        return f"vectors of {reused['requested']:,} documents read from the embedding cache"
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

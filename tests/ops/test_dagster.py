"""The Dagster definitions: the build-and-publish job, the weekly schedule, and sensors
evaluated against loopback mirrors; the publish asset run by Dagster."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import (
    AssetKey,
    Definitions,
    SensorDefinition,
    SensorResult,
    asset,
    build_sensor_context,
    materialize,
)

from metabundle.config import BuildSettings
from metabundle.orchestration import defs
from metabundle.orchestration.definitions import resources_for
from metabundle.orchestration.jobs import BUILD_AND_PUBLISH, rebuild_request
from metabundle.orchestration.progress import Progress
from metabundle.orchestration.resources import BuildConfig
from metabundle.orchestration.run import failure_message
from metabundle.sources.registry import SOURCES, get_source
from tests.ops.conftest import OmopBuilds, writable_copy
from tests.support.static_server import StaticServer, serve_static

ALL = ["dbgap", "ukb", "aou", "omop", "idc"]


def _sensor(name: str) -> SensorDefinition:
    return next(s for s in defs.sensors if s.name == name)


def _tick(name: str, config: BuildConfig, cursor: str | None) -> SensorResult:
    context = build_sensor_context(cursor=cursor, resources={"build_config": config})
    result = _sensor(name)(context)
    assert isinstance(result, SensorResult)
    return result


def _selected(result: SensorResult) -> set[str]:
    (request,) = result.run_requests or []
    return {key.to_user_string() for key in request.asset_selection or []}


def _touch_later(path: Path) -> None:
    later = time.time() + 10
    os.utime(path, (later, later))


@pytest.fixture(autouse=True)
def no_publish_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("METABUNDLE_PUBLISH_TO", raising=False)


def test_definitions_load_with_job_schedule_and_sensors() -> None:
    Definitions.validate_loadable(defs)
    job = defs.resolve_job_def(BUILD_AND_PUBLISH)
    assert {"release", "published_release", "raw_ukb", "core_idc"} <= set(job.graph.node_names())
    (schedule,) = [s for s in defs.schedules if s.name == "weekly_release"]
    assert schedule.cron_schedule == "0 4 * * 1"
    assert schedule.job_name == BUILD_AND_PUBLISH
    names = {s.name for s in defs.sensors}
    assert names == {"idc_upstream", "ukb_upstream", "dbgap_upstream"}
    assert all(s.job_name == BUILD_AND_PUBLISH for s in defs.sensors)


def test_sensors_are_made_from_the_source_registry() -> None:
    """One sensor per source whose spec offers a probe, at the probe's interval."""
    probed = {name: spec.probe for name, spec in SOURCES.items() if spec.probe is not None}
    sensors = {s.name: s for s in defs.sensors}
    assert set(sensors) == {f"{name}_upstream" for name in probed}
    for name, probe in probed.items():
        assert sensors[f"{name}_upstream"].minimum_interval_seconds == probe.interval_s
        assert probe.what in (sensors[f"{name}_upstream"].description or "")


@pytest.fixture
def ukb_mirror(tmp_path: Path, upstream_dir: Path) -> Iterator[tuple[Path, StaticServer]]:
    writable_copy(upstream_dir / "ukb", tmp_path / "mirror" / "ukb")
    with serve_static(tmp_path / "mirror") as server:
        yield tmp_path / "mirror", server


def _config(url: str, tmp_path: Path) -> BuildConfig:
    return BuildConfig(
        upstream=url,
        out=str(tmp_path / "out"),
        cache=str(tmp_path / "cache"),
        sources=ALL,
        http_attempts=1,
    )


def test_ukb_sensor_records_then_requests_a_ukb_only_rebuild(
    ukb_mirror: tuple[Path, StaticServer], tmp_path: Path
) -> None:
    mirror, server = ukb_mirror
    config = _config(server.url, tmp_path)
    first = _tick("ukb_upstream", config, None)
    assert not first.run_requests
    recorded = json.loads(first.cursor or "")
    assert recorded["fields_latest_version"] == "2025-09-20"
    assert set(recorded) >= {"ukb/scdown/1.txt", "ukb/scdown/2.txt", "ukb/scdown/13.txt"}

    before = len(server.requests)
    second = _tick("ukb_upstream", config, first.cursor)
    assert not second.run_requests and second.cursor == first.cursor
    rechecks = server.requests[before:]
    assert rechecks and all(r.conditional and r.status == 304 for r in rechecks)

    tree = mirror / "ukb" / "scdown" / "13.txt"
    tree.write_text(tree.read_text() + tree.read_text().splitlines(keepends=True)[-1])
    _touch_later(tree)
    third = _tick("ukb_upstream", config, second.cursor)
    (request,) = third.run_requests or []
    selected = _selected(third)
    assert {"raw_ukb", *get_source("ukb").tables, "search_docs", "release"} <= selected
    assert not selected & {"raw_dbgap", "raw_idc", "raw_omop", "raw_aou", "published_release"}
    assert request.tags["metabundle/sources"] == "ukb"
    assert "ukb/scdown/13.txt" in request.tags["metabundle/reason"]
    assert json.loads(third.cursor or "")["ukb/scdown/13.txt"] != recorded["ukb/scdown/13.txt"]
    # the run request is one the job can run
    defs.resolve_job_def(BUILD_AND_PUBLISH).get_subset(
        asset_selection=set(request.asset_selection or [])
    )


def test_a_sensor_whose_upstream_is_down_keeps_its_cursor(tmp_path: Path) -> None:
    config = _config("http://127.0.0.1:9", tmp_path)
    result = _tick("ukb_upstream", config, '{"ukb/scdown/1.txt": "x"}')
    assert not result.run_requests
    assert result.cursor is None  # unchanged
    assert "could not check ukb" in str(result.skip_reason)


def test_dbgap_sensor_notices_a_new_study(tmp_path: Path, upstream_dir: Path) -> None:
    mirror = tmp_path / "mirror"
    writable_copy(upstream_dir / "dbgap" / "advanced_search", mirror / "dbgap" / "advanced_search")
    studies = mirror / "dbgap" / "studies"
    studies.mkdir()
    for study in (upstream_dir / "dbgap" / "studies").iterdir():
        (studies / study.name).symlink_to(study, target_is_directory=True)
    with serve_static(mirror) as server:
        config = _config(server.url, tmp_path)
        first = _tick("dbgap_upstream", config, None)
        assert not first.run_requests and "ftp_studies" in json.loads(first.cursor or "")
        assert not _tick("dbgap_upstream", config, first.cursor).run_requests
        (studies / "phs999999").mkdir()
        changed = _tick("dbgap_upstream", config, first.cursor)
    selected = _selected(changed)
    assert "raw_dbgap" in selected and "dbgap_variable" in selected
    assert not selected & {"raw_ukb", "raw_idc", "raw_omop", "raw_aou"}
    assert "ftp_studies" in (changed.run_requests or [])[0].tags["metabundle/reason"]


def test_idc_sensor_requests_a_rebuild_when_the_installed_data_version_moves(
    tmp_path: Path,
) -> None:
    config = _config("http://127.0.0.1:9", tmp_path)  # IDC needs no network
    first = _tick("idc_upstream", config, None)
    tokens = json.loads(first.cursor or "")
    assert tokens["data_version"] == "v25" and not first.run_requests
    assert not _tick("idc_upstream", config, first.cursor).run_requests
    older = json.dumps({**tokens, "data_version": "v24", "package_version": "24.1.0"})
    upgraded = _tick("idc_upstream", config, older)
    selected = _selected(upgraded)
    assert {"raw_idc", "idc_series", "release"} <= selected
    assert not selected & {"raw_ukb", "raw_dbgap", "raw_omop", "raw_aou"}


def test_a_change_upstream_of_a_dependency_rebuilds_its_dependents(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = BuildConfig(sources=ALL, out=str(tmp_path)).settings()
    request = rebuild_request({"omop"}, settings, reason="test")
    keys = {k.to_user_string() for k in request.asset_selection or []}
    assert {"raw_omop", "raw_aou", "aou_item"} <= keys and "raw_ukb" not in keys
    assert "published_release" not in keys
    monkeypatch.setenv("METABUNDLE_PUBLISH_TO", str(tmp_path / "site"))
    request = rebuild_request({"omop"}, settings, reason="test")
    assert AssetKey("published_release") in (request.asset_selection or [])


def test_the_publish_asset_publishes_the_built_release(
    omop_builds: OmopBuilds, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    build = omop_builds.changed.build
    monkeypatch.setenv("METABUNDLE_PUBLISH_TO", str(tmp_path / "site"))
    settings = BuildConfig(out=str(build.out), cache=str(build.cache), sources=["omop"]).settings()
    assert isinstance(settings, BuildSettings)
    result = materialize(
        list(defs.assets or []),
        selection=[AssetKey("published_release")],
        resources=resources_for(settings, Progress()),
    )
    assert result.success
    published = Path(result.output_for_node("published_release"))
    assert published == tmp_path / "site" / "releases" / build.release.name
    assert (tmp_path / "site" / "latest").read_text().strip() == build.release.name


def test_an_unexpected_failure_names_its_cause_not_dagsters_wrapper() -> None:
    """A step that fails with an error of no metabundle kind is reported by that error
    (class and first line), not by Dagster's "Error occurred while executing op"
    wrapper, which names nothing."""

    @asset
    def crosswalk() -> None:
        try:
            raise KeyError("similar_pair")
        except KeyError as error:
            raise RuntimeError("Out of Memory Error: failed to pin block of 256 KiB") from error

    result = materialize([crosswalk], raise_on_error=False)
    assert not result.success
    message = failure_message(result)
    assert message.startswith("Build step crosswalk failed unexpectedly: ")
    assert message.endswith("RuntimeError: Out of Memory Error: failed to pin block of 256 KiB")
    assert "Error occurred while executing" not in message

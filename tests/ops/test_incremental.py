"""Incremental rebuilds, asserted from each build's own report
(``<out>/work/build_report.json``) and manifest, not from timings."""

from __future__ import annotations

import json

from tests.ops.conftest import EDITED_EXPORT, OmopBuilds

SEARCH_STEPS = {
    "search_docs": "search_docs",
    "keyword_index": "keyword_index",
    "embeddings": "embeddings",
    "ann_indexes": "ann_indexes",
}


def test_a_cold_build_reuses_nothing(omop_builds: OmopBuilds) -> None:
    cold = omop_builds.cold
    assert cold.step("raw_omop")["reused"]["unchanged"] == 0
    assert cold.step("core_omop")["reused"]["parse"] is False
    for step, flag in SEARCH_STEPS.items():
        assert cold.step(step)["reused"][flag] is False, step
    assert cold.step("release")["reused"]["release"] is False


def test_unchanged_inputs_reuse_every_stage_and_write_no_release(
    omop_builds: OmopBuilds,
) -> None:
    cold, again = omop_builds.cold, omop_builds.unchanged
    raw = again.step("raw_omop")["reused"]
    assert raw["files"] > 0 and raw["unchanged"] == raw["files"]  # every download revalidated
    assert again.step("core_omop")["reused"]["parse"] is True
    assert (
        again.step("core_omop")["reused"]["cache_key"]
        == cold.step("core_omop")["reused"]["cache_key"]
    )
    for step, flag in SEARCH_STEPS.items():
        assert again.step(step)["reused"][flag] is True, step
    release = again.step("release")["reused"]
    assert release == {"release": True, "version": cold.build.release.name}
    assert again.build.release == cold.build.release
    assert "up to date" in again.build.stderr
    assert again.releases == cold.releases == [cold.build.release.name]


def test_downloads_are_revalidated_and_only_a_changed_file_is_fetched_again(
    omop_builds: OmopBuilds,
) -> None:
    edited = f"/{EDITED_EXPORT}"
    files = [r for r in omop_builds.unchanged.requests if r.path.endswith(".csv")]
    assert files and all(r.conditional and r.status == 304 for r in files)
    again = [r for r in omop_builds.changed.requests if r.path.endswith(".csv")]
    assert {r.status for r in again if r.path != edited} == {304}
    assert [(r.conditional, r.status) for r in again if r.path == edited] == [(True, 200)]
    report = omop_builds.changed.step("raw_omop")["reused"]
    assert report["unchanged"] == report["files"] - 1


def test_a_changed_input_redoes_only_what_depends_on_it(omop_builds: OmopBuilds) -> None:
    cold, changed = omop_builds.cold, omop_builds.changed
    assert changed.step("core_omop")["reused"]["parse"] is False
    embeddings = changed.step("embeddings")["reused"]
    assert embeddings["embeddings"] is False
    # texts are embedded by content hash: only the renamed and the added concept are new
    assert 1 <= embeddings["embedded"] <= 5
    assert embeddings["cached"] + embeddings["embedded"] == embeddings["unique"]
    assert changed.step("ann_indexes")["reused"]["ann_indexes"] is False
    assert changed.step("release")["reused"]["release"] is False
    assert changed.build.release != cold.build.release
    assert (changed.build.out / "current").resolve() == changed.build.release


def test_the_manifest_records_the_stage_keys_it_was_built_from(omop_builds: OmopBuilds) -> None:
    cold, changed = omop_builds.cold, omop_builds.changed
    before = json.loads((cold.build.release / "manifest.json").read_text())["build"]
    after = json.loads((changed.build.release / "manifest.json").read_text())["build"]
    assert before["stages"]["core_omop"] == cold.step("core_omop")["reused"]["cache_key"]
    assert set(before["stages"]) == {
        "core_omop",
        "search_docs",
        "search_keyword",
        "search_embeddings",
        "search_ann",
        "search_crosswalk",
    }
    assert before["key"] != after["key"]
    assert before["stages"]["core_omop"] != after["stages"]["core_omop"]


def test_the_build_ends_with_a_summary_of_timings_and_reuse(omop_builds: OmopBuilds) -> None:
    again = omop_builds.unchanged
    summary = [line for line in again.build.stderr.splitlines() if "summary" in line]
    text = "\n".join(summary)
    assert "is up to date (inputs unchanged)" in text
    files = again.step("raw_omop")["reused"]["files"]
    assert f"{files} of {files} files unchanged since the last build" in text
    assert "parse reused" in text
    for step in ("raw_omop", "core_omop", "embeddings", "ann_indexes", "release"):
        assert step in text


def test_the_summary_shows_what_the_embedding_shards_embedded_and_found_cached(
    omop_builds: OmopBuilds,
) -> None:
    changed = omop_builds.changed
    shard = changed.step("embed omop_0")["reused"]
    assert 1 <= shard["embedded"] <= 5 and shard["cached"] > 0  # only the edited concepts
    [line] = [line for line in changed.report["summary"] if line.startswith("embed (1 shard)")]
    assert f"{shard['embedded']:,} texts embedded, {shard['cached']:,} from the embedding" in line
    assert line.endswith(" texts/s")
    unchanged = omop_builds.unchanged.report["summary"]
    assert not any(line.startswith("embed (") for line in unchanged)  # no shard ran
    assert any(
        line.startswith("embedding_shards") and "nothing to embed" in line for line in unchanged
    )

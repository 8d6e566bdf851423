"""``metabundle diff`` between the cold build and the build after an upstream edit."""

from __future__ import annotations

import json

from tests.ops.conftest import ADDED_CONCEPT, REMOVED_CONCEPT, RENAMED_CONCEPT, OmopBuilds
from tests.support.cli import run_cli


def _tables(result: dict) -> dict[str, dict]:
    return {t["name"]: t for t in result["tables"]}


def test_diff_names_added_removed_and_changed_entities(omop_builds: OmopBuilds) -> None:
    old, new = omop_builds.cold.build.release, omop_builds.changed.build.release
    result = run_cli("diff", str(old), str(new), "--json")
    assert result.returncode == 0, result.stderr
    diff = json.loads(result.stdout)
    assert (diff["old"]["version"], diff["new"]["version"]) == (old.name, new.name)
    assert diff["identical"] is False
    concept = _tables(diff)["omop_concept"]
    assert concept["compared"] is True
    assert (concept["added"], concept["removed"]) == (1, 1)
    assert concept["examples"]["added"] == [ADDED_CONCEPT]
    assert concept["examples"]["removed"] == [REMOVED_CONCEPT]
    assert RENAMED_CONCEPT in concept["examples"]["changed"]
    assert concept["new_rows"] == concept["old_rows"]
    omop = diff["sources"]["omop"]
    assert omop["inputs_changed"] is True
    assert omop["entities"]["added"] >= 1 and omop["entities"]["removed"] >= 1
    # derived search tables are compared by row count only
    assert _tables(diff)["search_doc"]["compared"] is False
    untouched = _tables(diff)["omop_vocabulary"]
    assert untouched["compared"] and not untouched["differs"]


def test_diff_text_is_readable(omop_builds: OmopBuilds) -> None:
    old, new = omop_builds.cold.build.release, omop_builds.changed.build.release
    result = run_cli("diff", str(old), str(new))
    assert result.returncode == 0, result.stderr
    assert f"metabundle diff {old.name} → {new.name}" in result.stdout
    line = next(x for x in result.stdout.splitlines() if "] omop_concept " in x)
    assert "+1 -1" in line
    assert f"added: {ADDED_CONCEPT}" in result.stdout


def test_a_release_has_no_differences_with_itself(omop_builds: OmopBuilds) -> None:
    release = omop_builds.cold.build.release
    result = run_cli("diff", str(release), str(release), "--json")
    assert result.returncode == 0, result.stderr
    diff = json.loads(result.stdout)
    assert diff["identical"] is True
    assert not any(t["added"] or t["removed"] or t["changed"] for t in diff["tables"])

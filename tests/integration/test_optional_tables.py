"""A valid selection may leave optional tables empty: dbGaP studies without variable
reports or documents build, and the empty tables are in the release with 0 rows,
while a table every release needs still stops the build when it is empty."""

from __future__ import annotations

import json
from pathlib import Path

from metabundle.schemas import get_table
from metabundle.search.release import Release
from metabundle.search.tools import call_tool
from tests.support.cli import run_cli

OPTIONAL = ("dbgap_variable_stat", "dbgap_variable_value_count", "dbgap_document")
NO_VAR_REPORT = "phs000179"  # in the mirror without var_report.xml or documents


def test_studies_without_var_reports_or_documents_build(mirror_url: str, tmp_path: Path) -> None:
    result = run_cli(
        "build",
        "--upstream",
        mirror_url,
        "--out",
        str(tmp_path / "out"),
        "--sources",
        "dbgap",
        "--dbgap-studies",
        NO_VAR_REPORT,
        "--embeddings",
        "none",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    release = Path(result.stdout.strip().splitlines()[-1])
    tables = json.loads((release / "manifest.json").read_text())["tables"]
    assert {name: tables[name]["rows"] for name in OPTIONAL} == dict.fromkeys(OPTIONAL, 0)
    assert tables["dbgap_variable"]["rows"] > 0
    with Release.open(release) as opened:
        payload = call_tool(opened, "run_sql", {"sql": "SELECT count(*) FROM dbgap_document"})
    assert payload["rows"] == [[0]]


def test_the_registry_says_which_tables_may_be_empty() -> None:
    assert all(get_table(name).allow_empty for name in OPTIONAL)
    for required in ("dbgap_study", "dbgap_variable", "dbgap_dataset"):
        assert not get_table(required).allow_empty

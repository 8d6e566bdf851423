"""The copy of idc-index-data's index schemas that a serving install reads is the
installed package's, and the registry declares the same tables from either."""

from __future__ import annotations

import json
import subprocess
import sys

from metabundle.schemas.idc_package import SNAPSHOT, snapshot_text
from tests.support.base_install import base_install_env
from tests.support.cli import clean_env


def test_the_schema_copy_is_the_installed_packages() -> None:
    assert SNAPSHOT.read_text(encoding="utf-8") == snapshot_text(), (
        "the copy is stale: python -m metabundle.schemas.idc_package writes it again"
    )


SCRIPT = """
import json, sys
from metabundle.schemas import all_tables
tables = sorted([t.name, [c.name for c in t.columns], t.description]
                for t in all_tables() if t.source == "idc")
print(json.dumps({"package_imported": "idc_index_data" in sys.modules, "tables": tables}))
"""


def _idc_tables(env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_serving_install_declares_the_same_idc_tables_from_the_copy() -> None:
    served, built = _idc_tables(base_install_env()), _idc_tables(clean_env())
    assert not served["package_imported"] and built["package_imported"]
    assert len(served["tables"]) > 10
    assert served["tables"] == built["tables"]

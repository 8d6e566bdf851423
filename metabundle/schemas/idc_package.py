"""What ``idc-index-data`` says of its indices: each index's schema JSON and whether the
package ships its Parquet.

A build installs the package (the ``build`` extra), and these come from it. A serving
install has no ``idc-index-data`` (a release already holds the IDC tables), so they come
from ``idc_index_schemas.json`` beside this module: the same facts, copied from the
package version ``pyproject.toml`` pins. ``python -m metabundle.schemas.idc_package``
writes that copy again from the installed package; a test fails while it differs.
"""

from __future__ import annotations

import functools
import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

SNAPSHOT = Path(__file__).with_name("idc_index_schemas.json")
DISTRIBUTION = "idc-index-data"


def _from_package() -> dict[str, Any] | None:
    """The facts from the installed package, or ``None`` where it is not installed."""
    try:
        import idc_index_data
    except ModuleNotFoundError:
        return None
    indices = {
        name: {
            "schema": meta["schema"],
            "shipped": isinstance(meta.get("parquet_filepath"), Path),
        }
        for name, meta in sorted(idc_index_data.INDEX_METADATA.items())
        if isinstance(meta.get("schema"), dict)
    }
    try:
        package_version = version(DISTRIBUTION)
    except PackageNotFoundError:  # importable without metadata: a source checkout
        package_version = None
    return {"idc_index_data_version": package_version, "indices": indices}


@functools.cache
def index_facts() -> dict[str, Any]:
    """``{"idc_index_data_version", "indices": {name: {"schema", "shipped"}}}``."""
    return _from_package() or json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def index_schema(index_name: str) -> dict[str, Any]:
    """The ``<index>_schema.json`` of ``index_name``."""
    facts = index_facts()["indices"].get(index_name)
    if facts is None:
        raise RuntimeError(f"idc-index-data describes no index {index_name}")
    return facts["schema"]


def unshipped_indices() -> tuple[str, ...]:
    """Indices the package describes without their Parquet, sorted."""
    return tuple(
        sorted(name for name, facts in index_facts()["indices"].items() if not facts["shipped"])
    )


def snapshot_text() -> str:
    """The snapshot file's text as the installed package would write it."""
    facts = _from_package()
    if facts is None:
        raise SystemExit("idc-index-data is not installed: pip install 'metabundle[build]'")
    return json.dumps(facts, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    SNAPSHOT.write_text(snapshot_text(), encoding="utf-8")
    print(f"wrote {SNAPSHOT}")

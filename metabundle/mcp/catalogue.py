"""The tool catalogue ``tools/list`` shows: every registered tool's name, group,
description and published input schema, precomputed into ``tools.json``.

With it, ``metabundle mcp`` lists its tools without importing the search core (DuckDB,
NumPy, PyArrow, the services and their pydantic models load on the first tool call).
``python -m metabundle.mcp.catalogue`` rewrites the file from the registry after a
tool changes; a test fails while the file differs from the registry.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

CATALOGUE_FILE = "tools.json"


def generate() -> list[dict[str, Any]]:
    """The catalogue from the tool registry (imports the search core)."""
    from metabundle.search.params import parameters_schema
    from metabundle.search.tools import all_tools

    return [
        {
            "name": spec.name,
            "group": spec.group,
            "description": spec.description,
            "input_schema": parameters_schema(spec.params),
        }
        for spec in all_tools()
    ]


def render(catalogue: list[dict[str, Any]]) -> str:
    """The file's text: stable, one key order, a final newline."""
    return json.dumps(catalogue, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


@cache
def load() -> list[dict[str, Any]]:
    """The catalogue shipped with the package."""
    text = resources.files(__package__).joinpath(CATALOGUE_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def main() -> None:
    path = Path(__file__).with_name(CATALOGUE_FILE)
    path.write_text(render(generate()), encoding="utf-8")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

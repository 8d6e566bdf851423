"""The allowed import graph (docs/architecture.md, "Layers"), enforced on the source.

Each top-level module or package of ``metabundle`` is a unit, except the build steps
that live in serving-side packages (``index.steps``, ``release.writer``), which are
units of their own. A unit may import only the units :data:`ALLOWED` lists, every
import counted, those inside functions included; the allowed graph has no cycle.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "metabundle"
SPLIT = ("index.steps", "release.writer")
FOUNDATION = {
    "errors",
    "extras",
    "settings",
    "digest",
    "db",
    "meter",
    "mapped",
    "upstream",
    "http_client",
}

ALLOWED: dict[str, set[str]] = {
    # foundation: what both sides use
    "errors": set(),
    "extras": {"errors"},
    "settings": {"errors"},
    "digest": set(),
    "db": {"settings"},
    "meter": set(),
    "mapped": set(),
    "upstream": {"errors"},
    "http_client": {"digest", "errors"},
    "terminal": {"meter"},
    "schemas": {"errors"},
    "staging": {"db", "errors", "schemas"},
    # the build
    "config": {"errors", "schemas", "settings", "upstream"},
    "sources": FOUNDATION | {"config", "schemas", "staging"},
    "index.steps": FOUNDATION | {"config", "index", "schemas", "sources", "staging"},
    "release.writer": FOUNDATION | {"config", "release", "schemas", "sources", "staging"},
    "orchestration": FOUNDATION
    | {"config", "index.steps", "release", "release.writer", "schemas", "sources"},
    "mirror": FOUNDATION | {"config", "sources"},
    # the read side: nothing of the build
    "index": FOUNDATION | {"schemas"},
    "release": FOUNDATION | {"index", "schemas"},
    "search": FOUNDATION | {"index", "release", "schemas"},
    "mcp": FOUNDATION | {"release", "schemas", "search"},
    "datasette_plugin": FOUNDATION | {"mcp", "release", "schemas", "search"},
    # the command line holds both sides; ``python -m metabundle`` runs it
    "__main__": {"cli"},
    "cli": FOUNDATION
    | {
        "config",
        "datasette_plugin",
        "mcp",
        "mirror",
        "orchestration",
        "release",
        "search",
        "sources",
        "terminal",
    },
}


def unit_of(module: str) -> str:
    rest = module.removeprefix("metabundle.")
    for split in SPLIT:
        if rest == split or rest.startswith(split + "."):
            return split
    return rest.split(".")[0]


def imports(package: Path = PACKAGE) -> dict[tuple[str, str], list[str]]:
    """``(unit, imported unit) → ["file:line", ...]`` for every import between units."""
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        module = ".".join(parts).removesuffix(".__init__")
        if module == "metabundle":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith("metabundle."):
                    pair = (unit_of(module), unit_of(name))
                    if pair[0] != pair[1]:
                        found[pair].append(f"{path.relative_to(package)}:{node.lineno}")
    return found


def test_every_unit_has_its_rules() -> None:
    units = {unit for pair in imports() for unit in pair}
    assert units <= set(ALLOWED), sorted(units - set(ALLOWED))


def test_no_import_outside_the_allowed_graph() -> None:
    violations = [
        f"{importer} imports {imported} ({', '.join(places[:3])})"
        for (importer, imported), places in sorted(imports().items())
        if imported not in ALLOWED.get(importer, set())
    ]
    assert violations == []


def test_the_allowed_graph_has_no_cycle() -> None:
    visiting: set[str] = set()
    done: set[str] = set()

    def visit(unit: str, path: tuple[str, ...]) -> None:
        assert unit not in visiting, f"cycle: {' -> '.join((*path, unit))}"
        if unit in done:
            return
        visiting.add(unit)
        for imported in sorted(ALLOWED[unit]):
            visit(imported, (*path, unit))
        visiting.discard(unit)
        done.add(unit)

    for unit in sorted(ALLOWED):
        visit(unit, ())


def test_the_check_sees_a_violating_import(tmp_path: Path) -> None:
    """A build import in a serving module is reported: the rules can fail."""
    package = tmp_path / "metabundle"
    (package / "search").mkdir(parents=True)
    (package / "search" / "ranking.py").write_text(
        "def late():\n    from metabundle.sources.registry import SOURCES\n"
    )
    found = imports(package)
    assert found == {("search", "sources"): ["search/ranking.py:2"]}
    assert "sources" not in ALLOWED["search"]

"""A source lives in three places named after it, and nothing else lists the sources:
its schema module (descriptor and tables), its build module and its services package."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import metabundle
from metabundle.schemas import tables_of_source
from metabundle.schemas.sources import DESCRIPTORS
from metabundle.search.tools import all_tools
from metabundle.sources.registry import SOURCES

PACKAGE = Path(metabundle.__file__).parent


def _literals_naming_sources(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """Lines of list, tuple, set and dict literals that name two sources or more."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [key for key in node.keys if key is not None]
        else:
            continue
        names = {i.value for i in items if isinstance(i, ast.Constant) and i.value in DESCRIPTORS}
        if len(names) > 1:
            found.append((node.lineno, sorted(names)))
    return found


def test_no_module_lists_the_sources() -> None:
    listed = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := _literals_naming_sources(ast.parse(path.read_text())))
    }
    assert listed == {}


def test_the_check_finds_a_list_of_sources() -> None:
    tree = ast.parse('SOURCES = ("dbgap", "ukb")\nOTHER = {"aou": 1, "idc": 2}\n')
    assert _literals_naming_sources(tree) == [(1, ["dbgap", "ukb"]), (2, ["aou", "idc"])]


@pytest.mark.parametrize("name", list(DESCRIPTORS))
def test_each_source_is_its_schema_module_build_module_and_services_package(name: str) -> None:
    descriptor = DESCRIPTORS[name]
    schema_module = importlib.import_module(f"metabundle.schemas.{name}")
    assert descriptor in vars(schema_module).values()
    assert SOURCES[name].descriptor is descriptor
    assert set(SOURCES[name].tables) <= {t.name for t in tables_of_source(name)}
    assert set(descriptor.main_tables) <= set(SOURCES[name].tables)
    services = importlib.import_module(f"metabundle.search.services.{name}")
    tools = [spec for spec in all_tools() if spec.group == name]
    assert tools and all(spec.handler.__module__.startswith(services.__name__) for spec in tools)
    if descriptor.search_tool:
        assert descriptor.search_tool in {spec.name for spec in tools}


def test_sources_are_listed_in_descriptor_order() -> None:
    assert list(SOURCES) == list(DESCRIPTORS)
    orders = [descriptor.order for descriptor in DESCRIPTORS.values()]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)

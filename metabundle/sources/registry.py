"""The list of sources a build can select, in dependency order."""

from __future__ import annotations

from metabundle.sources import aou, dbgap, idc, omop, ukb
from metabundle.sources.base import SourceSpec

SOURCES: dict[str, SourceSpec] = {
    spec.name: spec for spec in (dbgap.SOURCE, ukb.SOURCE, aou.SOURCE, omop.SOURCE, idc.SOURCE)
}


def source_names() -> tuple[str, ...]:
    return tuple(SOURCES)


def get_source(name: str) -> SourceSpec:
    return SOURCES[name]


def with_dependencies(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` plus every source they depend on, each after its dependencies and
    otherwise in registry order (aou is listed before omop but depends on it)."""
    wanted: set[str] = set()

    def add(name: str) -> None:
        if name not in wanted:
            wanted.add(name)
            for dependency in SOURCES[name].depends_on:
                add(dependency)

    for name in names:
        add(name)
    ordered: list[str] = []

    def place(name: str) -> None:
        if name not in ordered:
            for dependency in SOURCES[name].depends_on:
                place(dependency)
            ordered.append(name)

    for name in SOURCES:
        if name in wanted:
            place(name)
    return tuple(ordered)

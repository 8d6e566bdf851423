"""The list of sources a build can select, in dependency order."""

from __future__ import annotations

from metabundle.sources import idc
from metabundle.sources.base import SourceSpec

SOURCES: dict[str, SourceSpec] = {spec.name: spec for spec in (idc.SOURCE,)}


def source_names() -> tuple[str, ...]:
    return tuple(SOURCES)


def get_source(name: str) -> SourceSpec:
    return SOURCES[name]


def with_dependencies(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` plus every source they depend on, in registry order."""
    wanted: set[str] = set()

    def add(name: str) -> None:
        if name not in wanted:
            wanted.add(name)
            for dependency in SOURCES[name].depends_on:
                add(dependency)

    for name in names:
        add(name)
    return tuple(name for name in SOURCES if name in wanted)

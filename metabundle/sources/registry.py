"""The sources a build can select: for every source declared in
:data:`metabundle.schemas.sources.DESCRIPTORS`, the ``SOURCE`` spec of the module or
package of the same name under :mod:`metabundle.sources`, in the descriptors' order;
and their dependency order."""

from __future__ import annotations

import importlib

from metabundle.schemas.sources import DESCRIPTORS
from metabundle.sources.base import SourceSpec


def _spec_of(name: str) -> SourceSpec:
    spec = getattr(importlib.import_module(f"metabundle.sources.{name}"), "SOURCE", None)
    if not isinstance(spec, SourceSpec) or spec.name != name:
        raise RuntimeError(f"metabundle.sources.{name} declares no SOURCE for source {name}")
    return spec


SOURCES: dict[str, SourceSpec] = {name: _spec_of(name) for name in DESCRIPTORS}


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

"""What each source is, declared once in its own schema module: its name, title,
homepage, terms, citation, entry-page texts and how its search documents nest.

Each source's schema module (``schemas/<source>.py``) declares a
:class:`SourceDescriptor` and registers it with :func:`register_source`, beside its
tables. The build (:mod:`metabundle.sources`, whose ``SourceSpec`` adds the fetch and
parse steps), the serving side (the search core, the tool registry) and the Datasette
metadata read :data:`DESCRIPTORS`, so no list of source names is written anywhere
else and serving needs none of the build's modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from metabundle.schemas.model import Column


@dataclass(frozen=True)
class SourceDescriptor:
    """A source as readers of a release know it.

    ``order`` places the source in every list of sources (the build's default order,
    the tool list). ``license``, ``license_url``, ``about``, ``citation``,
    ``main_tables``, ``examples`` and ``charts`` (a datasette-dashboards slug) are the
    texts of its Datasette entry page and of its tables' terms. ``search_columns`` are
    the filter columns its search documents add to ``search_doc`` (two sources may
    share one, declared once). ``aliases`` are the names people give the source (in
    lower case) and ``search_tool`` the tool that searches it, so that another source's
    tool asked for it by name can point there. ``folded_kinds`` maps a
    kind of search document to the kind of its parent when, in a list that spans
    sources, a hit of the child is better shown as its parent (a survey answer "Yes"
    says nothing without its question).
    """

    name: str
    title: str
    homepage: str
    order: int
    license: str
    license_url: str
    about: str
    citation: str
    main_tables: tuple[str, ...]
    examples: tuple[str, ...]
    charts: str | None = None
    search_columns: tuple[Column, ...] = ()
    aliases: tuple[str, ...] = ()
    search_tool: str | None = None
    folded_kinds: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def entry_texts(self) -> dict[str, object]:
        """The texts of the source's Datasette entry page and table terms."""
        texts: dict[str, object] = {
            "license": self.license,
            "license_url": self.license_url,
            "about": self.about,
            "main_tables": list(self.main_tables),
            "examples": list(self.examples),
            "citation": self.citation,
        }
        if self.charts:
            texts["charts"] = self.charts
        return texts


_REGISTERED: dict[str, SourceDescriptor] = {}

DESCRIPTORS: Mapping[str, SourceDescriptor] = MappingProxyType(_REGISTERED)
"""Every source by name, in ``order``."""


def register_source(descriptor: SourceDescriptor) -> SourceDescriptor:
    """Add ``descriptor`` to :data:`DESCRIPTORS` (kept in ``order``)."""
    if descriptor.name in _REGISTERED:
        raise ValueError(f"source {descriptor.name} is declared twice")
    ordered = sorted([*_REGISTERED.values(), descriptor], key=lambda d: (d.order, d.name))
    _REGISTERED.clear()
    _REGISTERED.update((d.name, d) for d in ordered)
    return descriptor


def describe(name: str) -> SourceDescriptor:
    """The descriptor of source ``name``."""
    return DESCRIPTORS[name]


def source_list() -> str:
    """Every source name in a sentence: ``"dbgap, ukb, aou, omop or idc"``."""
    *first, last = DESCRIPTORS
    return f"{', '.join(first)} or {last}"

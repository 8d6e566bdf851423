"""What each source is, declared once: its name, title, homepage and how its search
documents nest. The build (:mod:`metabundle.sources`, whose ``SourceSpec`` adds the
fetch and parse steps) and the serving side (the search core, Datasette's metadata)
read these descriptors, so serving needs none of the build's modules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class SourceDescriptor:
    """A source as readers of a release know it.

    ``folded_kinds`` maps a kind of search document to the kind of its parent when, in
    a list that spans sources, a hit of the child is better shown as its parent (a
    survey answer "Yes" says nothing without its question).
    """

    name: str
    title: str
    homepage: str
    folded_kinds: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


DBGAP = SourceDescriptor(
    "dbgap", "dbGaP (database of Genotypes and Phenotypes)", "https://www.ncbi.nlm.nih.gov/gap/"
)
UKB = SourceDescriptor("ukb", "UK Biobank Showcase", "https://biobank.ndph.ox.ac.uk/ukb/")
AOU = SourceDescriptor(
    "aou",
    "All of Us Research Program public Data Browser",
    "https://databrowser.researchallofus.org/",
    MappingProxyType({"answer": "question"}),
)
OMOP = SourceDescriptor("omop", "OMOP standardized vocabularies", "https://athena.ohdsi.org/")
IDC = SourceDescriptor(
    "idc", "NCI Imaging Data Commons", "https://portal.imaging.datacommons.cancer.gov/"
)

DESCRIPTORS: Mapping[str, SourceDescriptor] = MappingProxyType(
    {d.name: d for d in (DBGAP, UKB, AOU, OMOP, IDC)}
)
"""Every source by name, in the build's registry order."""


def describe(name: str) -> SourceDescriptor:
    """The descriptor of source ``name``."""
    return DESCRIPTORS[name]


def source_list() -> str:
    """Every source name in a sentence: ``"dbgap, ukb, aou, omop or idc"``."""
    *first, last = DESCRIPTORS
    return f"{', '.join(first)} or {last}"

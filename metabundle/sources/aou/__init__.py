"""All of Us: the public Data Browser catalogue (surveys, physical measurements and
EHR concepts) as searchable items.

Inputs: the Data Browser repository's metadata CSVs and OpenAPI file at a fixed
commit, the omop2survey answer key, the public Data Browser API for participant counts
(only when the build may reach it), and the OMOP vocabulary tables of the ``omop``
source for EHR concepts. :mod:`.fetch` downloads, :mod:`.parse` builds the tables
declared in :mod:`metabundle.schemas.aou`, :mod:`.docs` yields the search documents.
"""

from __future__ import annotations

from metabundle.schemas.aou import AOU
from metabundle.sources.aou.coverage import coverage
from metabundle.sources.aou.docs import search_docs
from metabundle.sources.aou.fetch import REPOSITORY_RAW, fetch
from metabundle.sources.aou.parse import parse
from metabundle.sources.base import SourceSpec

SOURCE = SourceSpec(
    descriptor=AOU,
    tables=("aou_item", "aou_item_identifier", "aou_item_edge", "aou_item_link", "aou_unit"),
    fetch=fetch,
    parse=parse,
    search_docs=search_docs,
    coverage=coverage,
    public_urls=lambda settings: (f"{REPOSITORY_RAW}/",),
    depends_on=("omop",),
    version="3",  # 2: malformed records are quarantined; 3: answers the key failed to recode
)

__all__ = ["SOURCE"]

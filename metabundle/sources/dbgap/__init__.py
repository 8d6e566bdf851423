"""dbGaP: the Advanced Search studies export and the public FTP tree of study versions
(GapExchange study XML, data dictionaries, variable reports).

Modules: :mod:`.fetch` (selection, discovery through directory listings, download),
:mod:`.studies_csv`, :mod:`.gap_exchange`, :mod:`.data_dict`, :mod:`.var_report`
(one per upstream format), :mod:`.studies` (one row per study version),
:mod:`.parse` (the tables), :mod:`.docs` (search documents) and :mod:`.coverage`
(what the release holds of what dbGaP lists).
"""

from __future__ import annotations

from metabundle.schemas.dbgap import DBGAP
from metabundle.sources.base import HOUR_S, SourceSpec, UpstreamProbe
from metabundle.sources.dbgap.accessions import FTP_STUDIES
from metabundle.sources.dbgap.coverage import coverage
from metabundle.sources.dbgap.docs import search_docs
from metabundle.sources.dbgap.fetch import csv_public_url, fetch, upstream_tokens
from metabundle.sources.dbgap.parse import parse

SOURCE = SourceSpec(
    descriptor=DBGAP,
    tables=(
        "dbgap_study",
        "dbgap_unbuilt_study",
        "dbgap_dataset",
        "dbgap_variable",
        "dbgap_variable_value",
        "dbgap_variable_stat",
        "dbgap_variable_value_count",
        "dbgap_document",
    ),
    fetch=fetch,
    parse=parse,
    search_docs=search_docs,
    probe=UpstreamProbe(upstream_tokens, 24 * HOUR_S, "the dbGaP study list"),
    coverage=coverage,
    public_urls=lambda settings: (f"{FTP_STUDIES}/", csv_public_url()),
    version="3",  # 3: synthetic studies labelled, unbuilt studies listed
)

__all__ = ["SOURCE"]

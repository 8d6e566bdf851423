"""dbGaP: the Advanced Search studies export and the public FTP tree of study versions
(GapExchange study XML, data dictionaries, variable reports).

Modules: :mod:`.fetch` (selection, discovery through directory listings, download),
:mod:`.studies_csv`, :mod:`.gap_exchange`, :mod:`.data_dict`, :mod:`.var_report`
(one per upstream format), :mod:`.studies` (one row per study version),
:mod:`.parse` (the tables) and :mod:`.docs` (search documents).
"""

from __future__ import annotations

from metabundle.sources.base import SourceSpec
from metabundle.sources.dbgap.docs import search_docs
from metabundle.sources.dbgap.fetch import fetch
from metabundle.sources.dbgap.parse import parse

SOURCE = SourceSpec(
    name="dbgap",
    title="dbGaP (database of Genotypes and Phenotypes)",
    homepage="https://www.ncbi.nlm.nih.gov/gap/",
    tables=(
        "dbgap_study",
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
    version="2",  # 2: malformed records are quarantined
)

__all__ = ["SOURCE"]

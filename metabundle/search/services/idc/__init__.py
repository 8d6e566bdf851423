"""NCI Imaging Data Commons tools: the IDC API plan's collections, attributes, cohorts,
citations, licences, clinical tables, specialized indices and download URLs."""

# Importing a module registers its tools; this order is the order of tools/list.
# isort: off
from metabundle.search.services.idc import indices  # noqa: F401
from metabundle.search.services.idc import catalog, search, attributes  # noqa: F401
from metabundle.search.services.idc import citations, clinical, cohort, urls  # noqa: F401
# isort: on

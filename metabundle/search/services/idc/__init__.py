"""NCI Imaging Data Commons tools: the IDC API plan's collections, attributes, cohorts,
citations, licences, clinical tables, specialized indices and download URLs."""

# isort: off
from metabundle.search.services.idc import tools  # noqa: F401
from metabundle.search.services.idc import citations, clinical, cohort, indices, urls  # noqa: F401
# isort: on

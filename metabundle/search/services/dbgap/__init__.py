"""dbGaP tools: study resolution, studies, their catalog of variables, datasets and
documents, variables, and the cross-study variable search."""

# Importing a tool module registers its tools; this order is the order of tools/list.
# isort: off
from metabundle.search.services.dbgap import study_tools  # noqa: F401
from metabundle.search.services.dbgap import catalog_search  # noqa: F401
from metabundle.search.services.dbgap import cross_study, variable  # noqa: F401
# isort: on

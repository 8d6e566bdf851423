"""dbGaP tools: study resolution, studies, their catalog of variables and documents,
variables, and the cross-study variable search."""

# isort: off
from metabundle.search.services.dbgap import tools  # noqa: F401
from metabundle.search.services.dbgap import across, variable  # noqa: F401
# isort: on

"""OMOP vocabulary tools: the seed's concept search tools, the concept graph, concept
sets and the crosswalk from every source to standard concepts."""

# isort: off
from metabundle.search.services.omop import tools  # noqa: F401
from metabundle.search.services.omop import concept_set, crosswalk, graph  # noqa: F401
# isort: on

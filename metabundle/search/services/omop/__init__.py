"""OMOP vocabulary tools: the seed's concept search tools, the concept graph, concept
sets and the crosswalk from every source to standard concepts."""

# Importing a module registers its tools; this order is the order of tools/list.
# isort: off
from metabundle.search.services.omop import tools  # noqa: F401
from metabundle.search.services.omop import concept_set, crosswalk, graph  # noqa: F401
# isort: on

"""The search services: one package per tool group, each registering its tools with
:func:`metabundle.search.registry.tool`.

``release`` holds the release-wide tools (release info, tables, guarded SQL, the
cross-source search); each source's package (``dbgap``, ``ukb``, ``aou``, ``omop``,
``idc``) holds its contract's tools: tool modules (parameters in, a response model
out), ``queries.py`` (SQL over the release) and ``models.py`` (the pydantic response
models of its payloads).
"""

# Importing a package registers its tools; this order is the order of tools/list.
# isort: off
from metabundle.search.services import aou  # noqa: F401
from metabundle.search.services import release  # noqa: F401
from metabundle.search.services import dbgap  # noqa: F401
from metabundle.search.services import idc  # noqa: F401
from metabundle.search.services import omop  # noqa: F401
from metabundle.search.services import ukb  # noqa: F401
# isort: on

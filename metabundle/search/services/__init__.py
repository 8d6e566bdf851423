"""The search services: one package per tool group, each registering its tools with
:func:`metabundle.search.registry.tool`.

``release`` holds the release-wide tools (release info, tables, guarded SQL, the
cross-source search); each source's package (``dbgap``, ``ukb``, ``aou``, ``omop``,
``idc``) holds its contract's tools: tool modules (parameters in, a response model
out), ``queries.py`` (SQL over the release) and ``models.py`` (the pydantic response
models of its payloads).
"""

import importlib
import pkgutil

# Importing a package registers its tools (the registry orders them by group).
for _package in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_package.name}")

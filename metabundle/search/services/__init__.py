"""Per-source services: each module registers its tools with :mod:`..tools`.

``common`` holds the release-wide tools (release info, tables, guarded SQL, the
cross-source search); each source adds a module with its contract's tools.
"""

from metabundle.search.services import common  # noqa: F401  (registers tools)

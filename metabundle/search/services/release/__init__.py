"""Release-wide tools: release info, tables and their schemas, guarded SQL and the
cross-source ``search_all``."""

from metabundle.search.services.release import tools  # noqa: F401

"""UK Biobank tools: Showcase fields, their instances, encodings and categories."""

from metabundle.search.services.ukb import tools  # noqa: F401

"""All of Us tools: the Data Browser's surveys, questions, answers and concepts."""

from metabundle.search.services.aou import tools  # noqa: F401

"""All of Us options (``METABUNDLE_AOU_*``), read by its fetch step."""

from __future__ import annotations

from pydantic import Field

from metabundle.settings import Settings

DEFAULT_REF = "c2266b62"
"""Commit of all-of-us/data-browser the mirror was taken from (abbreviated as recorded
in shared/upstream/README.md; GitHub resolves an abbreviated SHA)."""


class AouSettings(Settings):
    """Where All of Us inputs are read from."""

    aou_api: str | None = Field(
        default=None, description="A Data Browser API base to ask, also from a mirror."
    )
    aou_data_browser_ref: str = Field(
        default=DEFAULT_REF, description="The all-of-us/data-browser commit to read."
    )

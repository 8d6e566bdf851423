"""The Imaging Data Commons source as its tools see it: its name and tool group, the
guard that refuses a release built without it, and the parameter types the tools share.

Everything answers from the release's ``idc_*`` tables (copied from the installed
``idc-index-data`` Parquet at build time); nothing reaches the network.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from metabundle.search.errors import not_found
from metabundle.search.params import clamp
from metabundle.search.release import Release

SOURCE = "idc"
GROUP = "idc"
PORTAL_URL = "https://portal.imaging.datacommons.cancer.gov/"

Text = Annotated[str, StringConstraints(max_length=200)]
MAX_OFFSET = 1_000_000_000
Offset = Annotated[
    int,
    Field(ge=0),
    clamp(0, MAX_OFFSET),
]


def require_idc(release: Release) -> None:
    """Refuse with ``not_found`` when the release was built without the IDC source."""
    if SOURCE not in release.manifest["sources"]:
        raise not_found(
            "This release has no Imaging Data Commons source; call get_release_info to "
            "see which sources it holds."
        )

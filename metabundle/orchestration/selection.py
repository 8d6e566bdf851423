"""The one asset selection: what a build of some sources materializes.

``metabundle build``, the ``release_build`` job for other executors, the
``build_and_publish`` job and every run request of a schedule or sensor select their
assets here.
"""

from __future__ import annotations

from collections.abc import Iterable

from dagster import AssetKey

from metabundle.orchestration.assets.publish import PUBLISH_ASSET
from metabundle.sources.registry import get_source

SEARCH_AND_RELEASE = (
    "search_docs",
    "keyword_index",
    "embeddings",
    "ann_indexes",
    "crosswalk",
    "release",
)


def selection(sources: Iterable[str], *, publish: bool = False) -> list[AssetKey]:
    """The assets that rebuild ``sources`` and write (and maybe publish) a release."""
    keys: list[AssetKey] = []
    for name in sources:
        keys.append(AssetKey(f"raw_{name}"))
        keys += [AssetKey(table) for table in get_source(name).tables]
    keys += [AssetKey(step) for step in SEARCH_AND_RELEASE]
    if publish:
        keys.append(AssetKey(PUBLISH_ASSET))
    return keys

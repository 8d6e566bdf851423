"""The ``published_release`` asset: the release, published into the static site folder
named by ``METABUNDLE_PUBLISH_TO`` (see :mod:`metabundle.release.publish`).

Only the ``build_and_publish`` job and its schedule and sensors select it;
``metabundle build`` does not publish.
"""

from pathlib import Path

from dagster import AssetExecutionContext, AssetsDefinition, ResourceParam, asset

from metabundle.orchestration.progress import Progress
from metabundle.release.publish import publish_release, require_target

PUBLISH_ASSET = "published_release"


@asset(
    name=PUBLISH_ASSET,
    group_name="release",
    description="The release published into the static site at METABUNDLE_PUBLISH_TO "
    "(releases/<version>/, releases/index.json, latest); a version already published "
    "with identical files is left as is.",
)
def published_release(
    context: AssetExecutionContext, release: str, progress: ResourceParam[Progress]
) -> str:
    target = require_target()
    with progress.step("publish") as record:
        result = publish_release(Path(release), target, report=progress.reporter("publish"))
        record.reused = {"publish": result.status == "unchanged", "version": result.version}
    context.add_output_metadata(
        {
            "site": str(target),
            "version": result.version,
            "status": result.status,
            "stored_bytes": result.stored_size,
        }
    )
    return str(result.path)


def publish_assets() -> list[AssetsDefinition]:
    return [published_release]

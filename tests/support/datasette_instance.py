"""The Datasette instance ``metabundle datasette`` serves, started in-process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from datasette.app import Datasette

from metabundle.datasette_plugin.serve import make_datasette


@contextlib.asynccontextmanager
async def running_datasette(release: Path) -> AsyncIterator[Datasette]:
    """Datasette serving ``release`` (its startup hooks run), closed afterwards."""
    instance = make_datasette(release)
    await instance.invoke_startup()
    try:
        yield instance
    finally:
        for database in instance.databases.values():
            database.close()
        instance.executor.shutdown(wait=False)

"""Fixtures of the Datasette tests: the session's release served in-process by the
same Datasette instance ``metabundle datasette`` serves."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from datasette.app import Datasette

from metabundle.release.datasette_meta import METADATA_FILE, RELEASE_FOLDER, SQLITE_FILE
from tests.support.build import Build
from tests.support.cli import clean_env, metabundle_command

DATABASE = "metabundle"


@pytest.fixture(scope="session")
def release_path(mirror_build: Build) -> Path:
    return mirror_build.release


@pytest.fixture(scope="session")
def metadata(release_path: Path) -> dict[str, Any]:
    """The rendered Datasette metadata inside the release."""
    return json.loads((release_path / RELEASE_FOLDER / METADATA_FILE).read_text())


@pytest.fixture(scope="session")
def sqlite_db(release_path: Path) -> Iterator[sqlite3.Connection]:
    """The release's SQLite file, opened read-only."""
    db = sqlite3.connect(f"file:{release_path / SQLITE_FILE}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    yield db
    db.close()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope: one event loop, and one instance, per test module


async def get_json(datasette: Datasette, path: str, status: int = 200) -> Any:
    response = await datasette.client.get(path)
    assert response.status_code == status, f"{path}: {response.status_code} {response.text[:500]}"
    return response.json()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def served_url(release_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``metabundle datasette`` serving the release on a free loopback port."""
    port = free_port()
    log = tmp_path_factory.mktemp("datasette-server") / "server.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [
                *metabundle_command(),
                "datasette",
                "--release",
                str(release_path),
                "--port",
                str(port),
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=clean_env(),
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"metabundle datasette exited {process.returncode}:\n{log.read_text()}")
            try:
                if httpx.get(f"{url}/-/versions.json", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"metabundle datasette did not answer in 60 s:\n{log.read_text()}")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

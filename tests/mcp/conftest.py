"""Fixtures of the MCP tests: the session's release served in-process."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.server.mcpserver import MCPServer

from metabundle.mcp.server import build_server
from metabundle.search.release import Release
from tests.support.build import Build


@pytest.fixture(scope="session")
def release_path(mirror_build: Build) -> Path:
    return mirror_build.release


@pytest.fixture(scope="session")
def server(release: Release) -> MCPServer:
    return build_server(release)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"

"""``metabundle mcp`` as a real process: stdio, streamable HTTP, and bad flags."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from metabundle.search.release import Release
from metabundle.search.tools import all_tools, call_tool
from tests.mcp.test_server import payload_of
from tests.support.cli import clean_env, metabundle_command, run_cli

pytestmark = pytest.mark.anyio

START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(process: subprocess.Popen[str], port: int) -> None:
    """Return once ``port`` accepts connections; fail if the server exits first."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"metabundle mcp --http exited: {process.stderr.read()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    pytest.fail(f"metabundle mcp --http did not listen on {port} in {START_TIMEOUT_S} s")


@contextlib.contextmanager
def http_server(release_path: Path, **env: str) -> Iterator[str]:
    """``metabundle mcp --http`` on a free loopback port, ``env`` added to its
    environment; yields the endpoint URL."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    process = subprocess.Popen(
        [*metabundle_command(), "mcp", "--release", str(release_path), "--http", address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(**env),
    )
    try:
        wait_for_port(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)
        process.stderr.close()


async def test_stdio_lists_tools_and_answers_a_call(release_path: Path, release: Release) -> None:
    command, *args = metabundle_command()
    params = StdioServerParameters(
        command=command, args=[*args, "mcp", "--release", str(release_path)], env=clean_env()
    )
    arguments = {"query": "lung", "method": "keyword", "limit": 3}
    async with Client(params) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("search_all", arguments)
    assert [tool.name for tool in tools] == [spec.name for spec in all_tools()]
    assert not result.is_error
    assert payload_of(result) == call_tool(release, "search_all", arguments)


async def test_streamable_http_answers_a_call(release_path: Path, release: Release) -> None:
    with http_server(release_path) as url:
        async with Client(url) as client:
            tools = (await client.list_tools()).tools
            result = await client.call_tool("list_tables", {})
            refused = await client.call_tool("run_sql", {"sql": "DROP TABLE idc_series"})
    assert {tool.name for tool in tools} == {spec.name for spec in all_tools()}
    assert payload_of(result) == call_tool(release, "list_tables", {})
    assert refused.is_error and payload_of(refused)["error"]["code"] == "invalid_request"


def test_a_missing_release_is_one_sentence_and_exit_1(tmp_path: Path) -> None:
    result = run_cli("mcp", "--release", str(tmp_path / "nowhere"), timeout=60)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"metabundle: No release at {tmp_path / 'nowhere'}; build one with `metabundle build`."
    ]


def test_a_folder_that_is_not_a_release_is_refused(tmp_path: Path) -> None:
    result = run_cli("mcp", "--release", str(tmp_path), timeout=60)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "is not a release folder" in lines[0]


def test_a_bad_http_address_is_a_usage_error(release_path: Path) -> None:
    result = run_cli("mcp", "--release", str(release_path), "--http", "localhost", timeout=60)
    assert result.returncode == 2
    assert "expected HOST:PORT" in result.stderr


# Fetch-side packages: httpx alone imports rich and pygments (its command line), about
# 0.15 s of every server start on the development machine.
FETCH_ONLY_MODULES = ("httpx", "rich", "pygments", "metabundle.http_client")


def test_serving_a_release_imports_no_fetch_code():
    """The MCP server and every tool load without the fetcher and its HTTP client."""
    probe = (
        "import sys, metabundle.mcp.server\n"
        "from metabundle.search.tools import all_tools\n"
        "all_tools()\n"
        f"print(sorted(m for m in {FETCH_ONLY_MODULES!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=clean_env(), check=True
    )
    assert done.stdout.strip() == "[]"

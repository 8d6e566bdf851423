"""``metabundle mcp --print-config CLIENT``: a configuration with absolute paths that a
client started with a plain ``PATH`` can launch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.build import Build
from tests.support.cli import run_cli

MINIMAL_PATH = "/usr/bin:/bin"
"""What a desktop client launched from a menu passes on: no virtual environment."""

LAUNCH = """
import asyncio, json, sys
from fastmcp import Client

async def main():
    async with Client(json.load(sys.stdin)) as client:
        tools = sorted(tool.name for tool in await client.list_tools())
        answer = await client.call_tool_mcp("search_all", {"query": "body mass index"})
    print(json.dumps({"tools": tools, "answer": json.loads(answer.content[0].text)}))

asyncio.run(main())
"""


def print_config(client: str, release: Path) -> dict:
    done = run_cli("mcp", "--print-config", client, "--release", str(release))
    assert done.returncode == 0, done.stderr
    assert "Add this to" in done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("client", "key", "typed"),
    [
        ("claude-desktop", "mcpServers", False),
        ("cursor", "mcpServers", False),
        ("vscode", "servers", True),
        ("claude-code", "mcpServers", True),
    ],
)
def test_each_client_gets_absolute_paths_in_its_format(
    client: str, key: str, typed: bool, mirror_build: Build
) -> None:
    server = print_config(client, mirror_build.release)[key]["metabundle"]
    assert ("type" in server) is typed and server.get("type", "stdio") == "stdio"
    assert Path(server["command"]).is_absolute() and Path(server["command"]).is_file()
    release = Path(server["args"][server["args"].index("--release") + 1])
    assert release.is_absolute() and release.resolve() == mirror_build.release.resolve()


def test_a_current_link_stays_a_link(mirror_build: Build) -> None:
    """The server follows a later build or download: ``current`` is kept, not resolved."""
    config = print_config("claude-desktop", mirror_build.out)
    release = config["mcpServers"]["metabundle"]["args"][-1]
    assert release == str(mirror_build.out.absolute() / "current")


def test_the_printed_claude_desktop_config_launches_with_a_minimal_path(
    mirror_build: Build, tmp_path: Path
) -> None:
    """An independent client (fastmcp, which reads Claude Desktop's ``mcpServers``
    format) starts the server from the printed configuration with PATH=/usr/bin:/bin."""
    config = print_config("claude-desktop", mirror_build.release)
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH],
        input=json.dumps(config),
        capture_output=True,
        text=True,
        env={"PATH": MINIMAL_PATH, "HOME": str(tmp_path)},
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    listed = json.loads(done.stdout)
    assert {"search_all", "get_release_info", "concept_search_fulltext"} <= set(listed["tools"])
    assert listed["answer"]["results"]

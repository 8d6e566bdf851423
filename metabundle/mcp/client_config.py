"""Ready MCP client configurations (``metabundle mcp --print-config CLIENT``): the
absolute path of this install's executable and of the release, in each client's format,
so a client started with a plain ``PATH`` (a desktop app, a service) finds both."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from metabundle.release.location import default_release_candidates, find_release

SERVER_NAME = "metabundle"

#: client -> (where its configuration lives, the top-level key of its servers, whether
#: each server names its transport)
CLIENTS: dict[str, tuple[str, str, bool]] = {
    "claude-desktop": (
        "claude_desktop_config.json (Claude Desktop: Settings > Developer > Edit Config)",
        "mcpServers",
        False,
    ),
    "vscode": ("the workspace's .vscode/mcp.json", "servers", True),
    "cursor": ("~/.cursor/mcp.json, or .cursor/mcp.json in a project", "mcpServers", False),
    "claude-code": (
        "the project's .mcp.json (or: claude mcp add-json metabundle '<the server object>')",
        "mcpServers",
        True,
    ),
}


def server_command() -> list[str]:
    """This install's ``metabundle`` as an absolute command: the console script beside
    the running interpreter, else the interpreter with ``-m metabundle``."""
    # absolute, never resolved: a virtual environment's python is a link out of it
    interpreter = Path(sys.executable).absolute()
    script = interpreter.with_name("metabundle")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(interpreter), "-m", "metabundle"]


def release_argument(given: Path | None) -> str:
    """The release as an absolute path; a ``current`` link stays a link, so the server
    follows a later download or build."""
    release = find_release(given)
    for candidate in [given] if given is not None else default_release_candidates():
        link = candidate.expanduser().absolute()
        if (link / "current").exists() and not (link / "manifest.json").exists():
            link = link / "current"
        if link.exists() and link.resolve() == release:
            return str(link)
    return str(release)


def client_config(client: str, release: Path | None) -> dict[str, Any]:
    """The configuration ``client`` reads, serving ``release`` over stdio."""
    _, key, typed = CLIENTS[client]
    command, *prefix = server_command()
    server: dict[str, Any] = {"type": "stdio"} if typed else {}
    server |= {"command": command, "args": [*prefix, "mcp", "--release", release_argument(release)]}
    return {key: {SERVER_NAME: server}}


def where_it_goes(client: str) -> str:
    """One line: where ``client`` keeps this configuration."""
    return f"Add this to {CLIENTS[client][0]}."

"""Drive a base install (no extras) of metabundle as a user would; run by that
environment's python from outside the checkout. Exits non-zero on the first failure.

Usage: python base_install_smoke.py RELEASE REPO WHEEL
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

BUILD_ONLY = ("dagster", "dagster_webserver", "polars", "openai", "hnswlib", "idc_index_data")
BIN = Path(sys.executable).parent
METABUNDLE = str(BIN / "metabundle")


def check(what: str, ok: bool, detail: str = "") -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))
    if not ok:
        sys.exit(1)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False, timeout=600)


def check_wheel_contents(repo: Path, wheel: Path) -> None:
    """Every package file the checkout tracks (templates, catalogues, model files) is in
    the wheel."""
    tracked = run("git", "-C", str(repo), "ls-files", "metabundle").stdout.split()
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    missing = [name for name in tracked if name not in shipped]
    check("the wheel holds every package file", not missing, ", ".join(missing))


def check_commands(release: str) -> None:
    import importlib.util

    present = [name for name in BUILD_ONLY if importlib.util.find_spec(name) is not None]
    check("no build package in the base install", not present, ", ".join(present))
    commands = json.loads(
        run(
            str(BIN / "python"),
            "-c",
            "import json, metabundle.cli as c; print(json.dumps(sorted(c.main.commands)))",
        ).stdout
    )
    for command in ["", *commands]:
        done = run(METABUNDLE, *([command] if command else []), "--help")
        check(f"metabundle {command} --help".replace("  ", " "), done.returncode == 0, done.stderr)
    done = run(str(BIN / "python"), "-m", "metabundle", "--help")
    check("python -m metabundle --help", done.returncode == 0, done.stderr)
    done = run(METABUNDLE, "build")
    hint = "pip install 'metabundle[build]'"
    check(
        "metabundle build names the extra",
        done.returncode == 1 and hint in done.stderr,
        done.stderr,
    )
    done = run(METABUNDLE, "search", "body mass index", "--release", release)
    check(
        "metabundle search", done.returncode == 0 and "Body mass index" in done.stdout, done.stderr
    )
    done = run(METABUNDLE, "info", "--release", release)
    check("metabundle info", done.returncode == 0, done.stderr)
    done = run(METABUNDLE, "verify", release)
    check("metabundle verify", done.returncode == 0, done.stderr)
    done = run(
        METABUNDLE, "call", "concept_search_fulltext", '{"query": "diabetes"}', "--release", release
    )
    check("metabundle call", done.returncode == 0, done.stdout + done.stderr)
    done = run(
        str(BIN / "python"),
        "-c",
        "from metabundle.index.embed import get_embedder; "
        "print(get_embedder('minilm').embed(['blood pressure']).shape)",
    )
    check("the packaged MiniLM tokenizer loads", done.stdout.strip() == "(1, 384)", done.stderr)


async def check_mcp(release: str) -> None:
    server = StdioServerParameters(command=METABUNDLE, args=["mcp", "--release", release])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {tool.name for tool in (await session.list_tools()).tools}
        check("MCP initialize + tools/list", "search_all" in tools, str(sorted(tools))[:200])
        result = await session.call_tool("search_all", {"query": "systolic blood pressure"})
        payload = json.loads(result.content[0].text)
        check("MCP search_all", not result.is_error and bool(payload["results"]), str(payload))


def check_datasette(release: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [METABUNDLE, "datasette", "--release", release, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            try:
                answer = httpx.get(
                    f"http://127.0.0.1:{port}/-/api/search_all", params={"query": "bmi"}
                )
                break
            except httpx.TransportError:
                time.sleep(0.5)
        else:
            check("Datasette starts", False, f"exit {process.poll()}")
        check(
            "Datasette /-/api/search_all through the plugin",
            answer.status_code == 200 and bool(answer.json()["results"]),
            answer.text[:300],
        )
        page = httpx.get(f"http://127.0.0.1:{port}/-/search", params={"q": "bmi"})
        check("Datasette /-/search page", page.status_code == 200, page.text[:300])
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    release, repo, wheel = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    os.environ.pop("PYTHONPATH", None)
    check_wheel_contents(repo, wheel)
    check_commands(release)
    asyncio.run(check_mcp(release))
    check_datasette(release)
    print("the base install serves")


if __name__ == "__main__":
    main()

"""Damaged releases through every way in: a corrupt DuckDB block, a manifest that is
not an object, an MCP resource read of a release that cannot open, and what the
digest record does and does not detect.

Each runs the real console script (``metabundle info``, ``verify``, ``search``) or
an independent MCP client (fastmcp over stdio, driving ``metabundle mcp``) on a copy
of the session build made of hard links, a damaged file replaced rather than edited
so that the session build stays intact."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp import MCPError

from metabundle.digest import sha256_file
from metabundle.mcp.resources import INFO_URI, TABLES_URI, TOOLS_URI
from metabundle.release.digest_record import record_digests
from metabundle.release.manifest import FORMAT, MANIFEST_FILE
from metabundle.search.errors import RELEASE_DAMAGED
from metabundle.search.release import Release
from metabundle.search.tools import call_tool
from tests.ops.conftest import error_line
from tests.ops.test_hostile_releases import write_release
from tests.reliability.test_open_checks import damage_in_place, linked_copy, rewrite, zero_weights
from tests.support.build import Build
from tests.support.cli import clean_env, metabundle_command, run_cli

DUCKDB = "metabundle.duckdb"
DAMAGED_DUCKDB = f"{DUCKDB} does not match its sha256 in {MANIFEST_FILE}"


@pytest.fixture
def copy(mirror_build: Build, tmp_path: Path) -> Path:
    """A hard-linked copy of the session build's release."""
    return linked_copy(mirror_build.release, tmp_path / mirror_build.release.name)


def corrupt_blocks(data: bytearray) -> None:
    """Zero 64 bytes at every MiB past the first: data blocks, not the header DuckDB
    reads when it opens the file."""
    for offset in range(1 << 20, len(data), 1 << 20):
        data[offset : offset + 64] = bytes(64)


async def mcp_session(release: Path, log: Path, act: Callable[[Client], Any]) -> Any:
    """``act(client)`` with an independent client of ``metabundle mcp`` serving
    ``release``, the server's stderr going to ``log``."""
    command, *args = metabundle_command()
    with log.open("w") as stderr:
        transport = StdioTransport(
            command, [*args, "mcp", "--release", str(release)], env=clean_env(), log_file=stderr
        )
        async with Client(transport) as client:
            return await act(client)


# -- a corrupt DuckDB block -----------------------------------------------------------------


@pytest.mark.anyio
async def test_a_corrupt_duckdb_block_is_release_damaged_not_internal_error(
    copy: Path, tmp_path: Path
) -> None:
    """DuckDB opens such a file and fails only the queries that read the block; the
    open check hashes the database (it is not in the copy's digest record)."""
    rewrite(copy / DUCKDB, corrupt_blocks)
    search = run_cli("search", "lung", "--release", str(copy), "--json")
    assert search.returncode == 1
    assert DAMAGED_DUCKDB in error_line(search.stderr)
    quick = run_cli("verify", "--quick", str(copy))
    assert quick.returncode == 1 and DAMAGED_DUCKDB in error_line(quick.stderr)

    async def search_all(client: Client) -> Any:
        return await client.call_tool(
            "search_all", {"query": "lung", "method": "keyword"}, raise_on_error=False
        )

    result = await mcp_session(copy, tmp_path / "mcp.log", search_all)
    error = result.structured_content["error"]
    assert error["code"] == RELEASE_DAMAGED and DAMAGED_DUCKDB in error["message"]


def test_a_duckdb_block_damaged_in_place_after_it_was_recorded_is_release_damaged(
    copy: Path, mirror_build: Build
) -> None:
    """The record vouches for the file (same inode, size and time), so only DuckDB's
    own block checksums see the damage, when a query reads the block."""
    database = copy / DUCKDB
    database.unlink()
    shutil.copyfile(mirror_build.release / DUCKDB, database)  # its own inode, to edit
    record_digests(copy, {DUCKDB: sha256_file(database)})
    for offset in range(1 << 20, database.stat().st_size, 1 << 20):
        damage_in_place(database, offset, bytes(64))
    # which query meets a damaged block depends on the file's layout: read every table
    codes: dict[str, str | None] = {}
    with Release.open(copy) as release:
        tables = [row[0] for row in release.query("SELECT table_name FROM duckdb_tables()")]
        for table in sorted(tables):
            sql = f'SELECT count(*), sum(hash(COLUMNS(*))) FROM "{table}"'
            payload = call_tool(release, "run_sql", {"sql": sql})
            codes[table] = payload.get("error", {}).get("code")
            if codes[table] == RELEASE_DAMAGED:
                assert DUCKDB in payload["error"]["message"]
    assert RELEASE_DAMAGED in codes.values(), codes
    assert set(codes.values()) <= {None, RELEASE_DAMAGED}, codes


# -- a manifest that is not an object ------------------------------------------------------


@pytest.mark.anyio
async def test_a_manifest_that_is_not_an_object_is_one_sentence_in_every_command(
    copy: Path, tmp_path: Path
) -> None:
    (copy / MANIFEST_FILE).unlink()
    (copy / MANIFEST_FILE).write_text("[1, 2]")
    for args in (
        ("info", "--release", str(copy)),
        ("verify", str(copy)),
        ("verify", "--quick", str(copy)),
        ("search", "lung", "--release", str(copy)),
    ):
        result = run_cli(*args)
        assert result.returncode == 1, args
        error = error_line(result.stderr)
        assert f"{copy / MANIFEST_FILE} holds a list where a {FORMAT} object belongs" in error
    log = tmp_path / "mcp.log"
    with pytest.raises(MCPError):  # the server refuses to start: the client sees it close
        await mcp_session(copy, log, lambda client: client.list_tools())
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and MANIFEST_FILE in lines[0] and lines[0].startswith("metabundle: ")


# -- an MCP resource of a release that cannot open -----------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("uri", [INFO_URI, TABLES_URI, TOOLS_URI])
async def test_a_resource_of_a_damaged_release_is_a_typed_error_without_a_traceback(
    copy: Path, tmp_path: Path, uri: str
) -> None:
    zero_weights(copy)
    log = tmp_path / "mcp.log"

    async def read(client: Client) -> Any:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
        return caught.value

    error = await mcp_session(copy, log, read)
    assert "fts/weight.npy does not match its sha256" in error.error.message
    assert "\n" not in error.error.message
    assert error.error.data == {"code": RELEASE_DAMAGED, "uri": uri}
    assert "Traceback" not in log.read_text() and len(log.read_text().splitlines()) <= 1


# -- what the digest record does and does not detect ---------------------------------------


def test_the_digest_record_detects_a_replaced_file_but_not_an_edit_that_keeps_its_stat(
    tmp_path: Path,
) -> None:
    """SECURITY.md's claim, exactly: the open check (``verify --quick``) trusts a file
    the record vouches for while it keeps its inode, size and modification time;
    ``verify --full`` re-hashes every byte and finds what the record hides."""
    folder = tmp_path / "release"
    (folder / "fts").mkdir(parents=True)
    weights = folder / "fts" / "weights.bin"
    weights.write_bytes(bytes(range(256)) * 16)
    release = write_release(folder)
    assert run_cli("verify", str(release)).returncode == 0  # full: hashes and records
    damage_in_place(weights, 100, b"\xff" * 8)  # inode, size and time kept
    quick = run_cli("verify", "--quick", str(release))
    assert quick.returncode == 0, "the record vouches for the file: not hashed again"
    full = run_cli("verify", str(release))
    assert full.returncode == 1 and "fts/weights.bin" in error_line(full.stderr)
    rewrite(weights, lambda data: None)  # the same bytes, as a new file (new inode)
    replaced = run_cli("verify", "--quick", str(release))
    assert replaced.returncode == 1
    assert "fts/weights.bin does not match its sha256" in error_line(replaced.stderr)

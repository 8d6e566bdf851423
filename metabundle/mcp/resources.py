"""Read-only reference resources: the retrieval contract and a guide to the release.

Agents read these instead of spending tool calls on them. Everything except the
contract is generated from the release through the core's own tools, so a resource
never disagrees with what ``list_tables`` or ``get_table_schema`` return; the core is
imported, and the release opened, when a resource is first read. A release that
cannot be opened answers every such read with a typed protocol error: one sentence
naming the damaged file, ``data.code`` ``release_damaged`` (the code a tool call gets),
and no traceback in the server's log.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING, Any

from mcp import MCPError
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.types import INTERNAL_ERROR

from metabundle.errors import ReleaseError
from metabundle.mcp.handle import ReleaseHandle
from metabundle.search.errors import RELEASE_DAMAGED

if TYPE_CHECKING:
    from metabundle.search.release import Release

CONTRACT_URI = "metabundle://contract/retrieval"
INFO_URI = "metabundle://release/info"
TABLES_URI = "metabundle://release/tables"
TABLE_URI = "metabundle://release/tables/{table}"
IDC_GUIDE_URI = "metabundle://guide/idc"
TOOLS_URI = "metabundle://guide/tools"
CONTRACT_FILE = "retrieval_contract.md"
IDC_GUIDE_FILE = "idc_guide.md"
MARKDOWN = "text/markdown"
JSON = "application/json"


def contract_text() -> str:
    """The retrieval contract shipped with the package."""
    return resources.files(__package__).joinpath(CONTRACT_FILE).read_text(encoding="utf-8")


def idc_guide_text() -> str:
    """The Imaging Data Commons query guide shipped with the package."""
    return resources.files(__package__).joinpath(IDC_GUIDE_FILE).read_text(encoding="utf-8")


def _table_section(table: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    lines = [f"### {table['name']} ({table['rows']:,} rows)", "", table["description"], ""]
    if "error" in schema:
        return [*lines, f"Schema unavailable: {schema['error']['message']}", ""]
    if schema["primary_key"]:
        lines.append(f"- Primary key: {', '.join(schema['primary_key'])}")
    if schema["url_column"]:
        lines.append(f"- Canonical URL column: {schema['url_column']}")
    lines.append(f"- Columns: {', '.join(c['name'] for c in schema['columns'])}")
    return [*lines, ""]


def table_guide(release: Release) -> str:
    """A Markdown guide to every table: source, rows, description, key columns."""
    from metabundle.search.tools import call_tool

    tables = call_tool(release, "list_tables", {})["tables"]
    lines = [
        f"# Tables of metabundle release {release.version}",
        "",
        "Query them with run_sql (DuckDB SQL, one SELECT). Tables are named "
        "{source}_{entity}; search_doc holds one row per searchable entity of every "
        "source, the fts_* and embedding tables hold the search indexes. Column types "
        f"and descriptions: get_table_schema or {TABLE_URI}.",
        "",
    ]
    for source in sorted({t["source"] for t in tables}):
        lines += [f"## {source}", ""]
        for table in (t for t in tables if t["source"] == source):
            schema = call_tool(release, "get_table_schema", {"table": table["name"]})
            lines += _table_section(table, schema)
    return "\n".join(lines)


def tool_guide(release: Release) -> str:
    """A Markdown guide to every tool the release offers: its description and the
    longer guidance ``tools/list`` leaves out."""
    from metabundle.search.tools import release_tools

    lines = [f"# Tools of metabundle release {release.version}", ""]
    for spec in release_tools(release):
        lines += [f"## {spec.name} ({spec.group})", "", spec.full_description, ""]
    return "\n".join(lines)


def _json(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, indent=2)


def _opened(handle: ReleaseHandle, uri: str) -> Release:
    """The handle's release, opened; a typed ``release_damaged`` protocol error naming
    the damaged file when it cannot be opened."""
    try:
        return handle.get()
    except ReleaseError as error:
        raise MCPError(INTERNAL_ERROR, str(error), {"code": RELEASE_DAMAGED, "uri": uri}) from None


def _call(handle: ReleaseHandle, uri: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    from metabundle.search.tools import call_tool

    return call_tool(_opened(handle, uri), name, arguments)


def add_resources(server: MCPServer, handle: ReleaseHandle) -> None:
    """Register the contract, release info, tool and table guides and per-table schemas."""

    @server.resource(
        CONTRACT_URI,
        name="retrieval_contract",
        title="Retrieval contract",
        description="How search ranks (methods, exact-first, filters, fallbacks), what "
        "scores mean, the SQL guard, error codes and what a result does not establish.",
        mime_type=MARKDOWN,
    )
    def retrieval_contract() -> str:
        return contract_text()

    if "idc" in handle.manifest["sources"]:

        @server.resource(
            IDC_GUIDE_URI,
            name="idc_guide",
            title="Imaging Data Commons guide",
            description="Where IDC properties live (main index, specialized indices, "
            "clinical tables) and the discovery-first workflow to cohorts and downloads.",
            mime_type=MARKDOWN,
        )
        def idc_guide() -> str:
            return idc_guide_text()

    @server.resource(
        INFO_URI,
        name="release_info",
        title="Release info",
        description="The release version, its sources with upstream versions and row "
        "counts, and the search setup (same payload as get_release_info).",
        mime_type=JSON,
    )
    def release_info() -> str:
        return _json(_call(handle, INFO_URI, "get_release_info", {}))

    @server.resource(
        TABLES_URI,
        name="table_guide",
        title="Table guide",
        description="Every table of the release by source: row count, description, "
        "primary key, canonical URL column and column names. Read before run_sql.",
        mime_type=MARKDOWN,
    )
    def tables() -> str:
        return table_guide(_opened(handle, TABLES_URI))

    @server.resource(
        TOOLS_URI,
        name="tool_guide",
        title="Tool guide",
        description="Every tool's description with its longer guidance (filters, "
        "fallbacks, what a result does not establish). Read it before a tool's first call.",
        mime_type=MARKDOWN,
    )
    def tools() -> str:
        return tool_guide(_opened(handle, TOOLS_URI))

    @server.resource(
        TABLE_URI,
        name="table_schema",
        title="Table schema",
        description="One table's columns with types, nullability and descriptions "
        "(same payload as get_table_schema).",
        mime_type=JSON,
    )
    def table_schema(table: str) -> str:
        payload = _call(handle, TABLE_URI.format(table=table), "get_table_schema", {"table": table})
        if "error" in payload:
            raise ResourceNotFoundError(payload["error"]["message"])
        return _json(payload)

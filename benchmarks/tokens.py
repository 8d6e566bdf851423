"""What the tools cost an agent's context window, and how fast ``metabundle mcp`` starts.

Counts tokens with OpenAI's ``o200k_base`` encoding from ``bpe-openai`` (its token
tables ship inside the package, so it runs offline), for ``tools/list`` as an MCP
client receives it and for the default answer of every registered tool (its
representative call, :data:`~metabundle.search.examples.EXAMPLE_CALLS`), beside the
bytes and the budget. In the same run, the start-up of ``metabundle mcp`` to its
``tools/list`` answer is measured against a process that only imports the MCP SDK.

    python -m benchmarks.tokens --release PATH [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from bpe_openai import get_encoding
from mcp import Client

from benchmarks.serving import mcp_start
from metabundle.mcp.server import build_server
from metabundle.search.budget import (
    PAYLOAD_MAX_BYTES,
    SEARCH_ANSWER_MAX_BYTES,
    TOOLS_LIST_MAX_BYTES,
    payload_bytes,
)
from metabundle.search.examples import EXAMPLE_CALLS, SEARCH_TOOLS
from metabundle.search.release import Release
from metabundle.search.tools import all_tools, call_tool

ENCODING = "o200k_base"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


async def _listed_tools(release: Release) -> list[dict[str, Any]]:
    async with Client(build_server(release)) as client:
        tools = (await client.list_tools()).tools
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


def measure(release_path: Path, repeats: int) -> dict[str, Any]:
    """Tokens and bytes of ``tools/list`` and of every tool's default answer, and the
    MCP start-up against the SDK's own import."""
    encoding = get_encoding(ENCODING)
    with Release.open(release_path) as release:
        tools = asyncio.run(_listed_tools(release))
        listing = _compact({"tools": tools})
        answers = {}
        for spec in all_tools():
            arguments = EXAMPLE_CALLS.get(spec.name)
            if arguments is None:
                answers[spec.name] = {"error": "no representative call in EXAMPLE_CALLS"}
                continue
            payload = call_tool(release, spec.name, arguments)
            budget = SEARCH_ANSWER_MAX_BYTES if spec.name in SEARCH_TOOLS else PAYLOAD_MAX_BYTES
            answers[spec.name] = {
                "bytes": payload_bytes(payload),
                "tokens": len(encoding.encode(_compact(payload))),
                "budget_bytes": budget,
                "error": payload["error"]["code"] if "error" in payload else None,
            }
    return {
        "encoding": ENCODING,
        "tools_list": {
            "tools": len(tools),
            "bytes": len(listing.encode()),
            "tokens": len(encoding.encode(listing)),
            "budget_bytes": TOOLS_LIST_MAX_BYTES,
        },
        "answers": answers,
        "mcp_start": mcp_start(release_path, repeats, profile=False),
    }


def render(report: dict[str, Any]) -> str:
    """The report as a Markdown table."""
    listing, start = report["tools_list"], report["mcp_start"]
    lines = [
        f"tools/list: {listing['tools']} tools, {listing['bytes']:,} bytes, "
        f"{listing['tokens']:,} tokens ({report['encoding']}; budget "
        f"{listing['budget_bytes']:,} bytes)",
        f"metabundle mcp to tools/list: {start['tools_list_s']} s; SDK import alone: "
        f"{start['sdk_import_s']} s (ratio {start['ratio_vs_sdk_import']}, "
        f"beyond the import {start['beyond_sdk_import_s']} s)",
        "",
        "| tool | bytes | tokens | budget |",
        "|---|---|---|---|",
    ]
    for name, answer in report["answers"].items():
        if "bytes" not in answer:
            lines.append(f"| {name} | {answer['error']} | | |")
            continue
        flag = " (error)" if answer["error"] else ""
        lines.append(
            f"| {name}{flag} | {answer['bytes']:,} | {answer['tokens']:,} | "
            f"{answer['budget_bytes']:,} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    report = measure(options.release, options.repeats)
    print(json.dumps(report, indent=2) if options.json else render(report))


if __name__ == "__main__":
    main()

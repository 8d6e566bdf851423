"""The coverage block of a release (``manifest.json`` → ``coverage``) as text, for
every place it is read: ``metabundle info``, the release README, the MCP server's
instructions and the Datasette index page."""

from __future__ import annotations

import html
from typing import Any

COMPLETE = "complete"
PARTIAL = "PARTIAL"


def source_lines(name: str, block: dict[str, Any]) -> list[str]:
    """One line for the source, then one per thing left out with its remedy."""
    state = COMPLETE if block["complete"] else PARTIAL
    lines = [f"{name}: {state}: {block['summary']}."]
    lines += [f"  left out: {gap['what']}; to add: {gap['remedy']}." for gap in block["left_out"]]
    return lines


def coverage_lines(coverage: dict[str, Any] | None) -> list[str]:
    """The whole block: a headline, then each source."""
    if not coverage:
        return ["coverage: not recorded (a release written before coverage blocks)."]
    profile = coverage["profile"]
    if coverage["complete"]:
        headline = f"Profile {profile}: every source holds everything its upstream offered."
    else:
        partial = [n for n, b in sorted(coverage["sources"].items()) if not b["complete"]]
        headline = (
            f"Profile {profile}: {', '.join(partial)} lack part of what their upstream "
            "offers (below), so an entity missing from them here may still exist upstream."
        )
    lines = [headline]
    for name, block in sorted(coverage["sources"].items()):
        lines += source_lines(name, block)
    if (coverage.get("crosswalk") or {}).get("sources"):
        lines.append(crosswalk_line(coverage["crosswalk"]))
    return lines


def crosswalk_line(block: dict[str, Any]) -> str:
    """The share of each source's entities linked to standard OMOP concepts."""
    shares = ", ".join(
        f"{name} {entry['linked']:,}/{entry['entities']:,}"
        for name, entry in sorted(block["sources"].items())
    )
    return f"crosswalk to standard OMOP concepts: {shares} linked (concept_crosswalk)."


def coverage_html(coverage: dict[str, Any] | None) -> str:
    """The block as an HTML paragraph and list, for the Datasette index page."""
    lines = coverage_lines(coverage)
    items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in lines[1:])
    return (
        f'<div class="metabundle-coverage"><p><b>Coverage.</b> {html.escape(lines[0])}</p>'
        f"<ul>{items}</ul></div>"
    )

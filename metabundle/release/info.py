"""A summary of a release for ``metabundle info``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from metabundle.release.coverage import coverage_lines
from metabundle.release.manifest import read_manifest


def release_summary(root: Path) -> dict[str, Any]:
    """Version, sources, table row counts, search setup and size of a release."""
    manifest = read_manifest(root)
    return {
        "path": str(root),
        "version": manifest["version"],
        "created_at": manifest["created_at"],
        "metabundle_version": manifest["metabundle_version"],
        "sources": {
            name: {
                "upstream": entry["upstream_url"],
                "upstream_version": entry.get("upstream_version"),
                "tables": entry["tables"],
            }
            for name, entry in sorted(manifest["sources"].items())
        },
        "tables": {name: entry["rows"] for name, entry in sorted(manifest["tables"].items())},
        "search": manifest.get("search"),
        "coverage": manifest.get("coverage"),
        "files": len(manifest["files"]),
        "bytes": sum(entry["size"] for entry in manifest["files"]),
    }


def summary_text(summary: dict[str, Any]) -> str:
    """The summary as a few readable lines."""
    lines = [
        f"metabundle release {summary['version']} ({summary['path']})",
        f"built {summary['created_at']} by metabundle {summary['metabundle_version']}; "
        f"{summary['files']} files, {summary['bytes'] / 1e6:,.1f} MB",
        "",
        *coverage_lines(summary["coverage"]),
        "",
        "sources:",
    ]
    for name, source in summary["sources"].items():
        version = source["upstream_version"] or "-"
        rows = sum(source["tables"].values())
        lines.append(f"  {name:<6} {rows:>12,} rows  version {version}  from {source['upstream']}")
    lines += ["", "tables:"]
    lines += [f"  {name:<32} {rows:>12,}" for name, rows in summary["tables"].items()]
    if summary["search"]:
        lines += ["", "search:"]
        lines += [f"  {key}: {value}" for key, value in sorted(summary["search"].items())]
    return "\n".join(lines)

"""The read side: open a release, per-source services, hybrid ranking, SQL guard.

This is the one search core. It imports neither MCP nor Datasette nor Dagster; the
CLI, the MCP server and the Datasette plugin are thin adapters over it.
"""

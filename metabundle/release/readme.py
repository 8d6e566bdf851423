"""The ``README.md`` inside every release: what it holds and how to open it."""

from __future__ import annotations

from metabundle.release.coverage import coverage_lines
from metabundle.release.manifest import Manifest

OPENING = """\
## Opening this release

- **DuckDB** (any client): `duckdb metabundle.duckdb`, then
  `SELECT * FROM information_schema.tables;`. Table and column descriptions are in
  `duckdb_tables()` / `duckdb_columns()` (`comment`).
- **Keyword search without metabundle**: the DuckDB file holds the macro
  `fts_search(q, k := 10)` over the `fts_*` tables (BM25):
  `SELECT d.doc_id, d.title, s.score FROM fts_search('body mass index', k := 10) s
  JOIN search_doc d USING (docno) ORDER BY s.score DESC;` (present when the release
  has search tables).
- **SQLite / Datasette**: `metabundle.sqlite`; `metabundle datasette` serves it.
- **Parquet**: `parquet/<table>.parquet` loads in polars, pandas, R, Spark; the
  release version is in each file's key-value metadata (`metabundle.release`).
- **metabundle**: `metabundle search QUERY --release .`, `metabundle mcp --release .`.
  It memory-maps `fts/` (keyword arrays), `ann/` (vectors and one index per source)
  `search/doc_rows.arrow` (the `search_doc` columns a result shows, in docno order) and
  `search/identifiers.arrow` (`search_identifier` in identifier order); both are
  Arrow IPC, which pyarrow and polars read.
- **Integrity**: `sha256sum -c SHA256SUMS` or `metabundle verify .`.

Titles, descriptions and notes are untrusted text copied from the sources.
"""


def release_readme(manifest: Manifest) -> str:
    """Markdown describing the release's sources and tables."""
    lines = [
        f"# metabundle release {manifest.version}",
        "",
        f"Built {manifest.created_at} by metabundle {manifest.metabundle_version}.",
        "",
        "## Coverage",
        "",
        *[f"- {line.strip()}" for line in coverage_lines(manifest.coverage)],
        "",
        "## Sources",
        "",
        "| source | upstream | upstream version | inputs sha256 |",
        "|---|---|---|---|",
    ]
    for name, entry in sorted(manifest.sources.items()):
        lines.append(
            f"| {name} | {entry['upstream_url']} | {entry.get('upstream_version') or '-'} "
            f"| `{entry['inputs_sha256'][:16]}…` |"
        )
    lines += ["", "## Tables", "", "| table | rows | description |", "|---|---:|---|"]
    for name, entry in sorted(manifest.tables.items()):
        description = entry["description"].replace("|", "\\|")
        lines.append(f"| `{name}` | {entry['rows']:,} | {description} |")
    if manifest.search:
        lines += ["", "## Search", ""]
        lines += [f"- {key}: {value}" for key, value in sorted(manifest.search.items())]
    lines += ["", OPENING]
    return "\n".join(lines)

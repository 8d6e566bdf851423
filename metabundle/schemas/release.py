"""Tables that describe the release itself: its metadata and what each source gave."""

from __future__ import annotations

from metabundle.schemas.model import Column, ColumnType, Table
from metabundle.schemas.registry import register
from metabundle.schemas.sources import source_list

S, I64, TS, J = ColumnType.STRING, ColumnType.INT64, ColumnType.TIMESTAMP, ColumnType.JSON

RELEASE_INFO = Table(
    name="release_info",
    source="metabundle",
    description="Key/value facts about this release: version, build time, software and "
    "embedding model.",
    columns=(
        Column("key", S, "Name of the fact, e.g. version or embedding_model.", nullable=False),
        Column("value", S, "Value of the fact, as text."),
    ),
    primary_key=("key",),
    label_column="key",
)

SOURCE_SNAPSHOT = Table(
    name="source_snapshot",
    source="metabundle",
    description="One row per source in this release: where its data came from, which "
    "upstream version, when it was fetched, a hash of its inputs and its row counts.",
    columns=(
        Column("source", S, f"Source name: {source_list()}.", nullable=False),
        Column("title", S, "Human-readable name of the source.", nullable=False),
        Column("upstream_url", S, "Base URL (or folder) the source was fetched from."),
        Column("upstream_version", S, "Version or date stamp the upstream publishes, if any."),
        Column("fetched_at", TS, "When the newest input file was fetched (UTC)."),
        Column(
            "inputs_sha256",
            S,
            "SHA-256 over the sorted (file, sha256) list of inputs.",
            nullable=False,
        ),
        Column("file_count", I64, "Number of upstream files read.", nullable=False),
        Column("total_bytes", I64, "Total size of the upstream files read.", nullable=False),
        Column("row_counts", J, "JSON object: table name → row count for this source."),
        Column(
            "details",
            J,
            "JSON object with source-specific provenance (package versions, "
            "study lists, quarantined records).",
        ),
    ),
    primary_key=("source",),
    label_column="title",
)

register(RELEASE_INFO, SOURCE_SNAPSHOT)

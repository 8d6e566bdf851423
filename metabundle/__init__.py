"""metabundle: one versioned, read-only search artifact over public biomedical metadata.

The package builds a release (DuckDB, Parquet, SQLite, FTS tables, ANN indexes,
manifest) from dbGaP, UK Biobank, All of Us, the OMOP vocabularies and NCI Imaging
Data Commons, and serves it read-only to the CLI, the MCP server and Datasette.
"""

__version__ = "0.1.0"

"""Release files: DuckDB, SQLite and Parquet writers, manifest, checksums, version
numbers, verification, publishing and downloading of releases.
"""

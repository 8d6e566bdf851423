"""File hashes, ``SHA256SUMS`` and order-independent table fingerprints."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from metabundle.db import connect
from metabundle.digest import sha256_file
from metabundle.schemas import get_table, quote_identifier

SUMS_FILE = "SHA256SUMS"


def write_sums(root: Path, digests: Mapping[str, str], *hashed: str) -> None:
    """Write ``SHA256SUMS`` (``sha256sum -c`` format): the files of ``digests``
    (relative path → sha256, already computed) and the ``hashed`` files, hashed here."""
    sums = {**digests, **{name: sha256_file(root / name) for name in hashed}}
    lines = [f"{sums[name]}  {name}\n" for name in sorted(sums)]
    (root / SUMS_FILE).write_text("".join(lines))


def read_sums(root: Path) -> dict[str, str]:
    """``relative path → sha256`` from ``root/SHA256SUMS``."""
    sums: dict[str, str] = {}
    for number, line in enumerate((root / SUMS_FILE).read_text().splitlines(), start=1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            raise ValueError(f"{SUMS_FILE} line {number} is malformed")
        sums[name] = digest
    return sums


def table_fingerprint(name: str, parquet: Path) -> str:
    """SHA-256 over a table's rows in key order: equal for equal contents, whatever the
    file layout (row groups, compression, metadata)."""
    table = get_table(name)
    order = ", ".join(f"row.{quote_identifier(k)}" for k in table.sort_key)
    digest = hashlib.sha256()
    with connect() as con:
        reader = con.sql(
            f"SELECT md5(CAST(row AS VARCHAR)) FROM read_parquet('{parquet}') AS row "
            f"ORDER BY {order or 'ALL'}"
        ).to_arrow_reader()
        for batch in reader:
            digest.update("".join(batch.column(0).to_pylist()).encode())
    return digest.hexdigest()

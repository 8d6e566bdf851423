"""Downloading the UK Biobank Showcase schemas, the legacy dictionary and the codings.

Schemas 1, 2 and 13 are required. Schema 3 (category titles) and the retired data
dictionary are optional: a 404 (or a mirror without the file) is recorded in the
snapshot details, never an error. The codings wanted are those that fields reference;
a mirror holds only some, so there they are discovered from the ``ukb/codown/``
directory listing, while against the public Showcase each referenced coding is
requested and the ones that are missing (404 or an empty body) are counted.
"""

from __future__ import annotations

from typing import Any

from metabundle.db import connect
from metabundle.errors import FetchError
from metabundle.sources.base import FetchContext, RawFile, RawSnapshot, Tokens
from metabundle.sources.ukb.files import (
    CATEGORIES,
    CATEGORY_TREE,
    CODING_DIR,
    CODING_FILE,
    ENCODINGS,
    FIELDS,
    LEGACY_KEY,
    LEGACY_URL,
    SHOWCASE,
    coding_id_of,
    coding_key,
    coding_url,
)
from metabundle.sources.ukb.tsv import (
    TsvFile,
    load_tsv,
    read_header,
    require_columns,
    skip_record,
)


def get_optional(ctx: FetchContext, key: str, url: str) -> RawFile | None:
    """Fetch a file that upstream may lack; None when it is not there."""
    try:
        return ctx.get(key, url)
    except FetchError as error:
        if error.absent:
            ctx.report(f"not in the upstream: {key} (optional; the build goes on without it)")
            return None
        raise


def referenced_codings(fields: RawFile) -> tuple[list[int], str | None]:
    """Encoding ids that schema 1 fields use (0, not encoded, excluded) and the latest
    field version date; every column of schema 1 must be present."""
    file = TsvFile(FIELDS.key, fields.path)
    require_columns(file, read_header(file), list(FIELDS.columns))
    wanted = {name: FIELDS.columns[name] for name in ("encoding_id", "version")}
    with connect() as con:
        load_tsv(con, "fields", [file], wanted, skip_record)
        ids = con.execute(
            "SELECT DISTINCT encoding_id FROM fields WHERE encoding_id <> 0 ORDER BY 1"
        ).fetchall()
        latest = con.execute("SELECT CAST(max(version) AS DATE) FROM fields").fetchall()
    version = latest[0][0].isoformat() if latest[0][0] is not None else None
    return [row[0] for row in ids], version


def mirrored_codings(ctx: FetchContext) -> set[int]:
    """Encoding ids whose coding file the mirror's ``ukb/codown/`` listing shows."""
    listing = ctx.fetcher.list_directory(ctx.upstream.directory(CODING_DIR, SHOWCASE))
    return {int(m.group(1)) for name in listing if (m := CODING_FILE.fullmatch(name))}


def fetch_codings(ctx: FetchContext, referenced: list[int]) -> dict[str, Any]:
    """Download the referenced codings that exist; say how they were found."""
    if ctx.upstream.is_mirror:
        listed = mirrored_codings(ctx)
        for encoding_id in referenced:
            if encoding_id in listed:
                ctx.get(coding_key(encoding_id), coding_url(encoding_id))
        discovery = "directory listing of the mirror's ukb/codown/"
    else:
        for encoding_id in referenced:
            get_optional(ctx, coding_key(encoding_id), coding_url(encoding_id))
        discovery = "one codown.cgi request per referenced coding"
    fetched = sorted(
        encoding_id
        for raw in ctx.files
        if (encoding_id := coding_id_of(raw.key)) is not None and raw.size > 0
    )
    return {
        "codings_discovery": discovery,
        "codings_referenced": len(referenced),
        "codings_fetched": fetched,
        "codings_missing": len(referenced) - len(fetched),
    }


def fetch(ctx: FetchContext) -> RawSnapshot:
    """Download schemas 1, 2, 13 (and 3 if it exists), the legacy dictionary and codings."""
    fields = ctx.get(FIELDS.key, FIELDS.url)
    for schema in (ENCODINGS, CATEGORY_TREE):
        ctx.get(schema.key, schema.url)
    titles = get_optional(ctx, CATEGORIES.key, CATEGORIES.url)
    legacy = get_optional(ctx, LEGACY_KEY, LEGACY_URL)
    referenced, version = referenced_codings(fields)
    if titles is not None:
        title_source = "Showcase schema 3"
    elif legacy is not None:
        title_source = "category paths of the legacy Data_Dictionary_Showcase.csv"
    else:
        title_source = "none (schema 3 and the legacy dictionary are both unavailable)"
    details = {
        "category_titles": title_source,
        "schema_3": "fetched" if titles is not None else "not available upstream",
        "legacy_dictionary": "fetched" if legacy is not None else "not available upstream",
        "fields_latest_version": version,
        **fetch_codings(ctx, referenced),
    }
    ctx.report(
        f"the fields use {details['codings_referenced']:,} codings (lists of coded values): "
        f"{len(details['codings_fetched']):,} fetched, {details['codings_missing']:,} not in "
        f"the upstream (the release's coverage lists them); category titles from {title_source}"
    )
    return ctx.snapshot(upstream_version=version, details=details)


def upstream_tokens(ctx: FetchContext) -> Tokens:
    """For the sensor: sha256 of each Showcase schema the build reads (revalidated
    through the download cache, so an unchanged schema costs a 304) and schema 1's
    version stamp (the newest field version date)."""
    files = {schema.key: ctx.get(schema.key, schema.url) for schema in (FIELDS, ENCODINGS)}
    files[CATEGORY_TREE.key] = ctx.get(CATEGORY_TREE.key, CATEGORY_TREE.url)
    tokens = {key: raw.sha256 for key, raw in sorted(files.items())}
    _codings, stamp = referenced_codings(files[FIELDS.key])
    tokens["fields_latest_version"] = stamp or "-"
    return tokens

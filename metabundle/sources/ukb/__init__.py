"""UK Biobank: the Showcase's data-fields, categories, encodings and coding values.

UK Biobank is not a dbGaP study and has its own identifiers: data-fields (``21001``),
categories, and encodings (data-codings) whose values may form trees (ICD-10 is coding
19). ``fetch`` (:mod:`.fetch`) downloads the Showcase schema files and codings; ``parse``
builds the tables declared in :mod:`metabundle.schemas.ukb`; ``search_docs``
(:mod:`.docs`) yields field, encoding and coding-value documents.
"""

from __future__ import annotations

from typing import NamedTuple

from metabundle.schemas.ukb import UKB
from metabundle.sources.base import HOUR_S, ParseContext, SourceSpec, UpstreamProbe
from metabundle.sources.ukb.categories import SchemaTitle, build_tree, category_table
from metabundle.sources.ukb.codings import (
    coding_files,
    coding_groups,
    encoding_relation,
    load_codings,
    value_relation,
)
from metabundle.sources.ukb.coverage import coverage
from metabundle.sources.ukb.docs import search_docs
from metabundle.sources.ukb.fetch import fetch, upstream_tokens
from metabundle.sources.ukb.fields import (
    alias_relation,
    field_relation,
    legacy_titles_table,
    unknown_codes,
)
from metabundle.sources.ukb.files import (
    CATEGORIES,
    CATEGORY_TREE,
    ENCODINGS,
    FIELDS,
    LEGACY_KEY,
    SchemaFile,
)
from metabundle.sources.ukb.legacy import leaf_paths, load_legacy
from metabundle.sources.ukb.lookups import lookup_rows
from metabundle.sources.ukb.markup import register_plain_text
from metabundle.sources.ukb.tsv import TsvFile, load_tsv, sql_literal

NAME = UKB.name


def _required(ctx: ParseContext, key: str) -> TsvFile:
    return TsvFile(key, ctx.snapshot.file(key).path)


def _optional(ctx: ParseContext, key: str) -> TsvFile | None:
    """The snapshot's file ``key``, or None when the fetch found none upstream."""
    found = ctx.snapshot.matching(lambda k: k == key)
    return TsvFile(key, found[0].path) if found else None


class SchemaLoad(NamedTuple):
    """How one schema file is loaded: into which temp table, with which checks."""

    table: str
    schema: SchemaFile
    not_empty: tuple[str, ...]
    unique: str | None
    optional: bool = False


SCHEMA_LOADS = (
    SchemaLoad("raw_tree", CATEGORY_TREE, ("parent_id", "child_id"), None),
    SchemaLoad("raw_encoding", ENCODINGS, ("encoding_id",), "encoding_id"),
    SchemaLoad("raw_category", CATEGORIES, ("category_id",), "category_id", optional=True),
    SchemaLoad("raw_field", FIELDS, ("field_id", "title"), "field_id"),
)
"""Smallest first, so that a malformed file fails fast."""


def _load_inputs(ctx: ParseContext) -> bool:
    """Read every input into temp tables (every coding header is checked first); True
    when schema 3 (category titles) is there."""
    con = ctx.con
    rows = ", ".join(f"({sql_literal(k)}, {c}, {sql_literal(v)})" for k, c, v in lookup_rows())
    con.execute(
        "CREATE OR REPLACE TEMP TABLE ukb_lookup AS "
        f"SELECT * FROM (VALUES {rows}) AS t(kind, code, label)"
    )
    groups = coding_groups(coding_files(ctx.snapshot))
    has_titles = False
    for load in SCHEMA_LOADS:
        file = _optional(ctx, load.schema.key) if load.optional else _required(ctx, load.schema.key)
        if file is None:
            continue
        load_tsv(
            con,
            load.table,
            [file],
            load.schema.columns,
            ctx.quarantine,
            required=load.not_empty,
            unique=load.unique,
        )
        has_titles = has_titles or load.schema is CATEGORIES
    load_legacy(ctx, _optional(ctx, LEGACY_KEY))
    legacy_titles_table(con)
    load_codings(ctx, groups)
    return has_titles


def _schema_titles(ctx: ParseContext, has_titles: bool) -> dict[int, SchemaTitle]:
    if not has_titles:
        return {}
    rows = ctx.con.execute(
        "SELECT category_id, title, descript, notes, availability, group_type "
        "FROM raw_category ORDER BY category_id"
    ).fetchall()
    return {row[0]: SchemaTitle(*row[1:]) for row in rows}


def _write_categories(ctx: ParseContext, has_titles: bool) -> None:
    con = ctx.con
    edges = con.execute("SELECT parent_id, child_id, showcase_order FROM raw_tree").fetchall()
    counts = con.execute(
        "SELECT main_category, count(*) FROM raw_field WHERE main_category IS NOT NULL GROUP BY 1"
    ).fetchall()
    table = category_table(
        build_tree(edges, ctx.report),
        _schema_titles(ctx, has_titles),
        leaf_paths(con),
        dict(counts),
    )
    ctx.write("ukb_category", table)
    con.register("category_rows", table)


def parse(ctx: ParseContext) -> None:
    """Build the five UK Biobank tables from the snapshot."""
    has_titles = _load_inputs(ctx)
    register_plain_text(ctx.con)
    for message in unknown_codes(ctx.con):
        ctx.report(message)
    _write_categories(ctx, has_titles)
    ctx.write("ukb_encoding_value", value_relation(ctx.con))
    ctx.write("ukb_encoding", encoding_relation(ctx.con))
    ctx.write("ukb_field", field_relation(ctx.con))
    ctx.write("ukb_field_alias", alias_relation(ctx.con))


SOURCE = SourceSpec(
    descriptor=UKB,
    tables=("ukb_field", "ukb_field_alias", "ukb_category", "ukb_encoding", "ukb_encoding_value"),
    fetch=fetch,
    parse=parse,
    search_docs=search_docs,
    coverage=coverage,
    public_urls=lambda settings: (FIELDS.url,),
    probe=UpstreamProbe(upstream_tokens, 6 * HOUR_S, "a Showcase schema or its version stamp"),
    version="3",  # 2: malformed records are quarantined; 3: plain-text notes
)

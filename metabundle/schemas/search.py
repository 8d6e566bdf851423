"""Search tables: one ``search_doc`` row per searchable entity, the FTS tables for
BM25 keyword search and the stored embedding vectors."""

from __future__ import annotations

from metabundle.schemas.model import Column, ColumnType, Table, Target
from metabundle.schemas.registry import register
from metabundle.schemas.sources import DESCRIPTORS, source_list

S, I32, I64, F64 = ColumnType.STRING, ColumnType.INT32, ColumnType.INT64, ColumnType.FLOAT64
B, SL, V = ColumnType.BOOL, ColumnType.STRING_LIST, ColumnType.VECTOR
I32L = ColumnType.INT32_LIST

COLUMNAR = frozenset({Target.DUCKDB, Target.PARQUET})


def doc_id(source: str, kind: str, entity_id: str) -> str:
    """A search document's id (``search_doc.doc_id``): ``<source>:<kind>:<entity_id>``."""
    return f"{source}:{kind}:{entity_id}"


def source_search_columns() -> tuple[Column, ...]:
    """The filter columns the sources' search documents add (each source's
    ``search_columns``, in source order, a shared column once)."""
    columns: dict[str, Column] = {}
    for descriptor in DESCRIPTORS.values():
        for column in descriptor.search_columns:
            if columns.setdefault(column.name, column) != column:
                raise ValueError(f"search_doc column {column.name} is declared twice, differently")
    return tuple(columns.values())


SEARCH_DOC = Table(
    name="search_doc",
    source="metabundle",
    description="One row per searchable entity of every source (study, dataset, variable, "
    "field, encoding, concept, survey item, collection, ...); the unit that keyword, "
    "semantic and hybrid search rank. Text fields are untrusted source data.",
    columns=(
        Column("doc_id", S, "Stable document id: <source>:<kind>:<entity_id>.", nullable=False),
        Column(
            "docno",
            I32,
            "Dense row number (0..n-1) used by the FTS tables and ANN "
            "indexes; assigned in doc_id order.",
            nullable=False,
        ),
        Column("source", S, f"Source name: {source_list()}.", nullable=False),
        Column(
            "kind", S, "Entity kind within the source, e.g. variable or collection.", nullable=False
        ),
        Column("entity_id", S, "Identifier of the entity in its own table.", nullable=False),
        Column("title", S, "Short title shown in results.", nullable=False),
        Column(
            "body",
            S,
            "Longer text indexed for keyword search (description, notes, synonyms, context).",
        ),
        Column("embed_text", S, "Text the embedding of this document was computed from."),
        Column("canonical_url", S, "Public page of the entity at its source."),
        Column(
            "parent_id",
            S,
            "Identifier of the parent entity (dataset of a variable, "
            "category of a field, question of an answer), if any.",
        ),
        *source_search_columns(),
        Column(
            "identifiers",
            SL,
            "Exact identifiers and aliases (lower-cased) that resolve "
            "to this entity before any ranking.",
        ),
    ),
    primary_key=("doc_id",),
    label_column="title",
    url_column="canonical_url",
    facets=("source", "kind"),
    text_columns=("title", "body"),
    hidden=True,
)

#: The ``search_doc`` columns a search answer shows, in the release's rows file
#: (``search/doc_rows.arrow``, :mod:`metabundle.release.doc_rows`).
SHOWN_DOC_COLUMNS = (
    "docno",
    "doc_id",
    "source",
    "kind",
    "entity_id",
    "title",
    "body",
    "canonical_url",
    "parent_id",
    "study_id",
    "domain",
    "vocabulary",
    "concept_class",
    "standard_concept",
    "is_valid",
    "variable_type",
    "role",
)

SEARCH_IDENTIFIER = Table(
    name="search_identifier",
    source="metabundle",
    description="Exact identifiers and aliases (lower-cased) of search documents: the "
    "lookup that resolves an accession, field ID, code or alias before any ranking.",
    columns=(
        Column("identifier", S, "An identifier or alias, lower-cased.", nullable=False),
        Column("docno", I32, "Document it resolves to (search_doc.docno).", nullable=False),
    ),
    primary_key=("identifier", "docno"),
    targets=COLUMNAR,
    hidden=True,
)

SEARCH_TITLE_WORD = Table(
    name="search_title_word",
    source="metabundle",
    description="Every word of the lower-cased titles of search documents (split at "
    "each character other than a-z and 0-9, two characters or more), per source, with "
    "the documents whose title holds it: what the title-similarity fallback compares a "
    "query's words with, so that it reads only the titles holding a close word.",
    columns=(
        Column("source", S, "Source of the documents (search_doc.source).", nullable=False),
        Column("word", S, "A title word.", nullable=False),
        Column(
            "docnos",
            I32L,
            "Documents whose title holds the word (search_doc.docno), ascending.",
            nullable=False,
        ),
    ),
    primary_key=("source", "word"),
    targets=COLUMNAR,
    hidden=True,
)

FTS_TERM = Table(
    name="fts_term",
    source="metabundle",
    description="Full-text vocabulary: one row per indexed term with its document "
    "frequency (see the fts_search macro).",
    columns=(
        Column("term_id", I32, "Term number, assigned in sorted term order.", nullable=False),
        Column("term", S, "The indexed (folded, stemmed) term.", nullable=False),
        Column("df", I32, "Number of documents containing the term.", nullable=False),
    ),
    primary_key=("term_id",),
    targets=COLUMNAR,
    hidden=True,
)

FTS_POSTING = Table(
    name="fts_posting",
    source="metabundle",
    description="Full-text postings: term frequency of each term in each document "
    "(title terms count twice).",
    columns=(
        Column("term_id", I32, "Term number (fts_term.term_id).", nullable=False),
        Column("docno", I32, "Document number (search_doc.docno).", nullable=False),
        Column("tf", I32, "Weighted term frequency in the document.", nullable=False),
    ),
    primary_key=("term_id", "docno"),
    targets=COLUMNAR,
    hidden=True,
)

FTS_DOC = Table(
    name="fts_doc",
    source="metabundle",
    description="Full-text document lengths (weighted token counts) for BM25 length normalization.",
    columns=(
        Column("docno", I32, "Document number (search_doc.docno).", nullable=False),
        Column("doc_len", I32, "Weighted number of indexed tokens.", nullable=False),
    ),
    primary_key=("docno",),
    targets=COLUMNAR,
    hidden=True,
)

FTS_FORM = Table(
    name="fts_form",
    source="metabundle",
    description="Surface forms seen in the corpus (lower-cased, accent-folded words) and "
    "the terms they index as; lets plain SQL tokenize a query like the Python tokenizer.",
    columns=(
        Column("form", S, "A word as split from text by the documented SQL rule.", nullable=False),
        Column("term_id", I32, "Term the form indexes as (fts_term.term_id).", nullable=False),
    ),
    primary_key=("form", "term_id"),
    targets=COLUMNAR,
    hidden=True,
)

FTS_STATS = Table(
    name="fts_stats",
    source="metabundle",
    description="Corpus statistics and BM25 parameters for the full-text tables.",
    columns=(
        Column("n_docs", I64, "Number of documents.", nullable=False),
        Column("avg_doc_len", F64, "Mean weighted document length.", nullable=False),
        Column("k1", F64, "BM25 term-frequency saturation parameter.", nullable=False),
        Column("b", F64, "BM25 length-normalization parameter.", nullable=False),
    ),
    primary_key=("n_docs",),
    targets=COLUMNAR,
    hidden=True,
)

FTS_VARIANT = Table(
    name="fts_variant",
    source="metabundle",
    description="Term variants the corpus defines, which keyword search also scores: "
    "abbreviations a document spells out ('Body mass index (BMI)') and British/American "
    "spellings the vocabulary holds both of (anaemia/anemia).",
    columns=(
        Column("kind", S, "abbreviation or spelling.", nullable=False),
        Column(
            "form", S, "The short form as written, or the British spelling's term.", nullable=False
        ),
        Column(
            "variant",
            S,
            "The long form as written, or the American spelling's term.",
            nullable=False,
        ),
        Column(
            "documents",
            I32,
            "Documents defining the abbreviation (0 for spellings).",
            nullable=False,
        ),
    ),
    primary_key=("kind", "form", "variant"),
    targets=COLUMNAR,
    hidden=True,
)

EMBEDDING = Table(
    name="embedding",
    source="metabundle",
    description="Embedding vector of each search document (L2-normalized), as the release "
    "serves it (ann/vectors.npy); kept so ANN indexes can be rebuilt and any client can "
    "run exact cosine search. In Parquet only (DuckDB reads it with read_parquet): a copy "
    "in the DuckDB file was a kilobyte a document, 3.0 of its 4.7 GB at 3M documents.",
    columns=(
        Column("docno", I32, "Document number (search_doc.docno).", nullable=False),
        Column("doc_id", S, "Document id (search_doc.doc_id).", nullable=False),
        Column("model", S, "Embedding model id.", nullable=False),
        Column(
            "vector",
            V,
            "The embedding as ann/vectors.npy stores it (float16) in float32: unit length "
            "to about 1e-3, the cosines serving scores with.",
            nullable=False,
        ),
    ),
    primary_key=("docno",),
    targets=frozenset({Target.PARQUET}),
    hidden=True,
)

register(
    SEARCH_DOC,
    SEARCH_IDENTIFIER,
    SEARCH_TITLE_WORD,
    FTS_TERM,
    FTS_POSTING,
    FTS_DOC,
    FTS_FORM,
    FTS_STATS,
    FTS_VARIANT,
    EMBEDDING,
)

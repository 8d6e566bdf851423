"""The crosswalk table: links from every source's entities to standard OMOP concepts
(built by ``index/crosswalk.py``)."""

from __future__ import annotations

from metabundle.schemas.model import Column, ColumnType, Table
from metabundle.schemas.registry import register

S, I64, F64 = ColumnType.STRING, ColumnType.INT64, ColumnType.FLOAT64

CONCEPT_CROSSWALK = Table(
    name="concept_crosswalk",
    source="metabundle",
    description="Links from All of Us items, UK Biobank coding values and fields, and "
    "dbGaP variables to standard OMOP concepts, each with its method and provenance. "
    "link_type 'curated' comes from the sources' own codes and OHDSI's mappings; "
    "'similarity' links were made by embedding similarity and are not curated mappings.",
    columns=(
        Column("source", S, "Source of the entity: aou, ukb or dbgap.", nullable=False),
        Column(
            "entity_kind",
            S,
            "Kind of entity: an All of Us item kind, encoding_value, field or variable.",
            nullable=False,
        ),
        Column(
            "entity_id",
            S,
            "The entity's id: aou_item.result_id, '<encoding_id>:<value>', field_id or "
            "the dbGaP variable id.",
            nullable=False,
        ),
        Column("entity_label", S, "The entity's title or meaning, as the source gives it."),
        Column("concept_id", I64, "The standard OMOP concept linked to.", nullable=False),
        Column(
            "source_concept_id",
            I64,
            "The concept the entity carries or codes to, before 'Maps to' (null for "
            "similarity links).",
        ),
        Column("source_vocabulary_id", S, "Vocabulary of the source concept."),
        Column("source_code", S, "Code of the source concept in its vocabulary."),
        Column(
            "relationship_id",
            S,
            "How the source concept reaches concept_id: self, Maps to, or as_given (a "
            "concept id the vocabulary of this release does not hold).",
        ),
        Column(
            "method",
            S,
            "aou_concept_id, ukb_coding_code, ukb_coding_code_related_vocabulary, "
            "ukb_field_vocabulary or embedding_similarity.",
            nullable=False,
        ),
        Column("link_type", S, "curated or similarity.", nullable=False),
        Column("score", F64, "Cosine similarity of a similarity link; null when curated."),
        Column("provenance", S, "How the link was made, in words.", nullable=False),
    ),
    primary_key=("source", "entity_id", "concept_id", "method"),
    facets=("source", "method", "link_type"),
    allow_empty=True,
)

register(CONCEPT_CROSSWALK)

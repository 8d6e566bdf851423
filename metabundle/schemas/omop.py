"""OMOP standardized vocabulary tables, as OMOP CDM v5.4 declares them.

Column names are the CDM's (lower case) so that SQL written against a CDM vocabulary
schema runs unchanged on ``omop_<table>``. Types and ``NOT NULL`` follow the CDM
except that every concept id is a 64-bit integer and ``vocabulary_reference`` is
nullable (it is empty for some vocabularies). A ``NOT NULL`` text column that a file
leaves empty holds an empty string.

The Athena reader (:mod:`metabundle.sources.omop.athena`) derives each file's
expected header, column types and required columns from these declarations: a
column's upper-cased name is its Athena header, and ``nullable=False`` means the file
must give it a value.
"""

from __future__ import annotations

from metabundle.schemas.model import Column, ColumnType, ForeignKey, Table, Target
from metabundle.schemas.registry import register
from metabundle.schemas.sources import SourceDescriptor, register_source

CONCEPT_DOC_COLUMNS = (
    Column("domain", ColumnType.STRING, "OMOP or All of Us domain of the entity, if any."),
    Column("vocabulary", ColumnType.STRING, "Vocabulary of a concept-like entity, if any."),
    Column("concept_class", ColumnType.STRING, "OMOP concept class, if any."),
    Column(
        "standard_concept",
        ColumnType.STRING,
        "OMOP standard flag: S (standard), C (classification) or null.",
    ),
    Column("is_valid", ColumnType.BOOL, "False when the entity is retired or invalid upstream."),
)
"""The search_doc filter columns of concept-like documents (OMOP concepts, All of Us
items, which carry OMOP concepts)."""

OMOP = register_source(
    SourceDescriptor(
        name="omop",
        title="OMOP standardized vocabularies",
        homepage="https://athena.ohdsi.org/",
        order=4,
        license=(
            "OHDSI Athena vocabulary terms (licensed vocabularies such as CPT4 need their "
            "own licence)"
        ),
        license_url="https://athena.ohdsi.org/",
        about=(
            "The OMOP standardized vocabularies (OHDSI Athena): concepts of SNOMED, "
            'ICD-10, LOINC, RxNorm and others, with synonyms, relationships ("Maps to", '
            '"Is a") and the ancestor hierarchy.'
        ),
        citation=(
            "Reich C, Ostropolets A, Ryan P, et al. OHDSI Standardized Vocabularies: a "
            "large-scale centralized reference ontology for international data "
            "harmonization. J Am Med Inform Assoc. 2024;31(3):583-590."
        ),
        main_tables=(
            "omop_concept",
            "omop_concept_relationship",
            "omop_concept_ancestor",
            "omop_concept_synonym",
            "omop_vocabulary",
        ),
        examples=("myocardial infarction", "hemoglobin A1c", "metformin"),
        charts="omop",
        search_columns=CONCEPT_DOC_COLUMNS,
        aliases=("omop", "omop vocabularies", "athena", "ohdsi"),
        search_tool="concept_ground",
    )
)

SOURCE = OMOP.name

S, I32, I64 = ColumnType.STRING, ColumnType.INT32, ColumnType.INT64
F64, D = ColumnType.FLOAT64, ColumnType.DATE


def _valid_start() -> Column:
    return Column(
        "valid_start_date", D, "Date the row became valid in the vocabulary.", nullable=False
    )


def _valid_end() -> Column:
    return Column(
        "valid_end_date",
        D,
        "Date the row stopped being valid (2099-12-31 while still valid).",
        nullable=False,
    )


def _invalid_reason() -> Column:
    return Column(
        "invalid_reason",
        S,
        "Why the row is no longer valid: D (deleted), U (replaced by an updated row); "
        "null while valid.",
    )


OMOP_CONCEPT = Table(
    name="omop_concept",
    source=SOURCE,
    description="OMOP standardized vocabulary concepts (CDM CONCEPT): every code of every "
    "vocabulary with its domain, class and standard flag, from an Athena export.",
    columns=(
        Column("concept_id", I64, "OMOP concept id, unique across vocabularies.", nullable=False),
        Column("concept_name", S, "Unambiguous English name of the concept.", nullable=False),
        Column(
            "domain_id",
            S,
            "Domain of the concept, e.g. Condition, Drug, Measurement (omop_domain).",
            nullable=False,
        ),
        Column(
            "vocabulary_id",
            S,
            "Vocabulary the concept comes from, e.g. SNOMED, ICD10CM (omop_vocabulary).",
            nullable=False,
        ),
        Column(
            "concept_class_id",
            S,
            "Class of the concept within its vocabulary (omop_concept_class).",
            nullable=False,
        ),
        Column(
            "standard_concept",
            S,
            "S for a standard concept, C for a classification concept, null otherwise.",
        ),
        Column(
            "concept_code",
            S,
            "The code of the concept in its source vocabulary, e.g. K92.2.",
            nullable=False,
        ),
        _valid_start(),
        _valid_end(),
        _invalid_reason(),
    ),
    primary_key=("concept_id",),
    foreign_keys=(
        ForeignKey("domain_id", "omop_domain"),
        ForeignKey("vocabulary_id", "omop_vocabulary"),
        ForeignKey("concept_class_id", "omop_concept_class"),
    ),
    label_column="concept_name",
    facets=("domain_id", "vocabulary_id", "concept_class_id", "standard_concept"),
    text_columns=("concept_name", "concept_code"),
)

OMOP_CONCEPT_SYNONYM = Table(
    name="omop_concept_synonym",
    source=SOURCE,
    description="Alternative names of concepts (CDM CONCEPT_SYNONYM), in several languages.",
    columns=(
        Column("concept_id", I64, "Concept the synonym names (omop_concept).", nullable=False),
        Column("concept_synonym_name", S, "The alternative name.", nullable=False),
        Column(
            "language_concept_id",
            I64,
            "Concept id of the synonym's language (4180186 is English).",
            nullable=False,
        ),
    ),
    primary_key=("concept_id", "concept_synonym_name", "language_concept_id"),
    foreign_keys=(ForeignKey("concept_id", "omop_concept"),),
    label_column="concept_synonym_name",
    text_columns=("concept_synonym_name",),
)

OMOP_CONCEPT_RELATIONSHIP = Table(
    name="omop_concept_relationship",
    source=SOURCE,
    description="Directed relationships between concepts (CDM CONCEPT_RELATIONSHIP), e.g. "
    "'Maps to' from a source code to its standard concept, 'Is a' to a parent.",
    columns=(
        Column("concept_id_1", I64, "Concept the relationship starts from.", nullable=False),
        Column("concept_id_2", I64, "Concept the relationship points to.", nullable=False),
        Column(
            "relationship_id",
            S,
            "Kind of relationship, e.g. Maps to, Is a (omop_relationship).",
            nullable=False,
        ),
        _valid_start(),
        _valid_end(),
        _invalid_reason(),
    ),
    primary_key=("concept_id_1", "concept_id_2", "relationship_id"),
    foreign_keys=(
        ForeignKey("concept_id_1", "omop_concept"),
        ForeignKey("concept_id_2", "omop_concept"),
        ForeignKey("relationship_id", "omop_relationship"),
    ),
    facets=("relationship_id",),
)

OMOP_CONCEPT_ANCESTOR = Table(
    name="omop_concept_ancestor",
    source=SOURCE,
    description="Transitive closure of the hierarchy between standard and classification "
    "concepts (CDM CONCEPT_ANCESTOR); every concept is also its own ancestor at level 0.",
    columns=(
        Column("ancestor_concept_id", I64, "The higher-level concept.", nullable=False),
        Column("descendant_concept_id", I64, "The lower-level concept.", nullable=False),
        Column(
            "min_levels_of_separation",
            I32,
            "Fewest hierarchy steps between the two concepts.",
            nullable=False,
        ),
        Column(
            "max_levels_of_separation",
            I32,
            "Most hierarchy steps between the two concepts.",
            nullable=False,
        ),
    ),
    primary_key=("ancestor_concept_id", "descendant_concept_id"),
    foreign_keys=(
        ForeignKey("ancestor_concept_id", "omop_concept"),
        ForeignKey("descendant_concept_id", "omop_concept"),
    ),
)

OMOP_VOCABULARY = Table(
    name="omop_vocabulary",
    source=SOURCE,
    description="Vocabularies of the export (CDM VOCABULARY) with their versions; the row "
    "'None' carries the version of the OMOP vocabulary release itself.",
    columns=(
        Column("vocabulary_id", S, "Vocabulary identifier, e.g. SNOMED.", nullable=False),
        Column("vocabulary_name", S, "Full name and publisher of the vocabulary.", nullable=False),
        Column("vocabulary_reference", S, "Where the vocabulary is published."),
        Column("vocabulary_version", S, "Version of the vocabulary in this export."),
        Column(
            "vocabulary_concept_id",
            I64,
            "Concept that represents the vocabulary.",
            nullable=False,
        ),
    ),
    primary_key=("vocabulary_id",),
    label_column="vocabulary_name",
    text_columns=("vocabulary_name",),
)

OMOP_DOMAIN = Table(
    name="omop_domain",
    source=SOURCE,
    description="Domains concepts belong to (CDM DOMAIN), e.g. Condition, Drug, Measurement.",
    columns=(
        Column("domain_id", S, "Domain identifier.", nullable=False),
        Column("domain_name", S, "Name of the domain.", nullable=False),
        Column("domain_concept_id", I64, "Concept that represents the domain.", nullable=False),
    ),
    primary_key=("domain_id",),
    label_column="domain_name",
)

OMOP_CONCEPT_CLASS = Table(
    name="omop_concept_class",
    source=SOURCE,
    description="Concept classes (CDM CONCEPT_CLASS), e.g. Clinical Finding, Ingredient.",
    columns=(
        Column("concept_class_id", S, "Concept class identifier.", nullable=False),
        Column("concept_class_name", S, "Name of the concept class.", nullable=False),
        Column(
            "concept_class_concept_id",
            I64,
            "Concept that represents the concept class.",
            nullable=False,
        ),
    ),
    primary_key=("concept_class_id",),
    label_column="concept_class_name",
)

OMOP_RELATIONSHIP = Table(
    name="omop_relationship",
    source=SOURCE,
    description="Kinds of concept relationship (CDM RELATIONSHIP) and their reverses.",
    columns=(
        Column("relationship_id", S, "Relationship identifier, e.g. Maps to.", nullable=False),
        Column("relationship_name", S, "Name of the relationship.", nullable=False),
        Column(
            "is_hierarchical",
            S,
            "1 when the relationship is hierarchical, else 0.",
            nullable=False,
        ),
        Column(
            "defines_ancestry",
            S,
            "1 when the relationship is used to build omop_concept_ancestor, else 0.",
            nullable=False,
        ),
        Column(
            "reverse_relationship_id",
            S,
            "The relationship that points the other way, e.g. Mapped from.",
            nullable=False,
        ),
        Column(
            "relationship_concept_id",
            I64,
            "Concept that represents the relationship.",
            nullable=False,
        ),
    ),
    primary_key=("relationship_id",),
    label_column="relationship_name",
)

OMOP_DRUG_STRENGTH = Table(
    name="omop_drug_strength",
    source=SOURCE,
    description="Amount or concentration of each ingredient of a drug concept (CDM "
    "DRUG_STRENGTH); empty when no export ships DRUG_STRENGTH.csv.",
    columns=(
        Column("drug_concept_id", I64, "Drug concept (omop_concept).", nullable=False),
        Column("ingredient_concept_id", I64, "Ingredient concept of the drug.", nullable=False),
        Column("amount_value", F64, "Amount of the ingredient in a solid drug."),
        Column("amount_unit_concept_id", I64, "Unit concept of amount_value."),
        Column("numerator_value", F64, "Ingredient amount of a concentration."),
        Column("numerator_unit_concept_id", I64, "Unit concept of numerator_value."),
        Column("denominator_value", F64, "Volume or mass a concentration refers to."),
        Column("denominator_unit_concept_id", I64, "Unit concept of denominator_value."),
        Column("box_size", I32, "Number of units in a box, for boxed drugs."),
        _valid_start(),
        _valid_end(),
        _invalid_reason(),
    ),
    primary_key=("drug_concept_id", "ingredient_concept_id"),
    foreign_keys=(
        ForeignKey("drug_concept_id", "omop_concept"),
        ForeignKey("ingredient_concept_id", "omop_concept"),
    ),
    allow_empty=True,
)


def _lookup_copy(table: Table, key: tuple[str, ...], name: str, purpose: str) -> Table:
    """``table`` again, sorted by ``key``, in the DuckDB file only: lookups by a column
    the table's own order does not lead with read a few row groups instead of all."""
    return Table(
        name=name,
        source=SOURCE,
        description=f"{table.name} sorted by {key[0]}, for {purpose} (DuckDB only; "
        f"the same rows as {table.name}).",
        columns=table.columns,
        primary_key=key,
        targets=frozenset({Target.DUCKDB}),
        hidden=True,
    )


OMOP_CONCEPT_ANCESTOR_BY_DESCENDANT = _lookup_copy(
    OMOP_CONCEPT_ANCESTOR,
    ("descendant_concept_id", "ancestor_concept_id"),
    "omop_concept_ancestor_by_descendant",
    "a concept's ancestors",
)
OMOP_CONCEPT_RELATIONSHIP_INBOUND = _lookup_copy(
    OMOP_CONCEPT_RELATIONSHIP,
    ("concept_id_2", "concept_id_1", "relationship_id"),
    "omop_concept_relationship_inbound",
    "the relationships that point to a concept",
)
LOOKUP_COPIES = {
    OMOP_CONCEPT_ANCESTOR.name: OMOP_CONCEPT_ANCESTOR_BY_DESCENDANT,
    OMOP_CONCEPT_RELATIONSHIP.name: OMOP_CONCEPT_RELATIONSHIP_INBOUND,
}
"""Each table with a lookup copy, and the copy (written by the OMOP parse step)."""

OMOP_TABLES = (
    OMOP_CONCEPT,
    OMOP_CONCEPT_SYNONYM,
    OMOP_CONCEPT_RELATIONSHIP,
    OMOP_CONCEPT_ANCESTOR,
    OMOP_VOCABULARY,
    OMOP_DOMAIN,
    OMOP_CONCEPT_CLASS,
    OMOP_RELATIONSHIP,
    OMOP_DRUG_STRENGTH,
)

register(*OMOP_TABLES, *LOOKUP_COPIES.values())

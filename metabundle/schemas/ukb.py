"""UK Biobank Showcase tables: data-fields, their column-name aliases, categories,
encodings (data-codings) and coding values.

Fields come from Showcase schema 1, encodings from schema 2, the category tree from
schema 13 (titles from schema 3, or from the retired data dictionary's category paths
where schema 3 is unavailable), coding values from the per-coding ``codown.cgi``
downloads. Every numeric property code of a field keeps its published value and gets a
``*_label`` column with its published meaning (see ``metabundle.sources.ukb.lookups``).
"""

from __future__ import annotations

from metabundle.schemas.model import Column, ColumnType, ForeignKey, Table
from metabundle.schemas.registry import register
from metabundle.schemas.sources import SourceDescriptor, register_source

UKB = register_source(
    SourceDescriptor(
        name="ukb",
        title="UK Biobank Showcase",
        homepage="https://biobank.ndph.ox.ac.uk/ukb/",
        order=2,
        license="UK Biobank Showcase terms (public schema and coding files)",
        license_url="https://biobank.ndph.ox.ac.uk/ukb/",
        about=(
            "The UK Biobank Showcase schema: data-fields with their value types, "
            "instances, arrays and participant counts, the category tree, and the codings "
            "(data dictionaries) with their values."
        ),
        citation=(
            "Sudlow C, Gallacher J, Allen N, et al. UK Biobank: an open access resource "
            "for identifying the causes of a wide range of complex diseases of middle and "
            "old age. PLoS Med. 2015;12(3):e1001779."
        ),
        main_tables=(
            "ukb_field",
            "ukb_category",
            "ukb_encoding",
            "ukb_encoding_value",
            "ukb_field_alias",
        ),
        examples=("body mass index", "alcohol intake frequency", "21001"),
        charts="ukb",
        aliases=("uk biobank", "ukbiobank", "ukbb", "ukb"),
        search_tool="search_ukb_fields",
    )
)

SOURCE = UKB.name

S, I32, I64, F64 = ColumnType.STRING, ColumnType.INT32, ColumnType.INT64, ColumnType.FLOAT64
B, D = ColumnType.BOOL, ColumnType.DATE


def _coded(name: str, what: str) -> tuple[Column, Column]:
    """A property code as published and its published meaning."""
    return (
        Column(name, I32, f"{what} code as published in Showcase schema 1."),
        Column(f"{name}_label", S, f"Published meaning of {name} (null when none exists)."),
    )


UKB_FIELD = Table(
    name="ukb_field",
    source=SOURCE,
    description="UK Biobank Showcase data-fields (schema 1), one row per field, with "
    "property codes decoded to their published meanings, the main category's title and "
    "path, and the encoding's title. Titles and notes are untrusted source text.",
    columns=(
        Column("field_id", I32, "Showcase data-field id.", nullable=False),
        Column("title", S, "Field title.", nullable=False),
        Column("availability", I32, "Availability code as published (meaning unpublished)."),
        *_coded("stability", "Stability"),
        Column("private", I32, "Private flag as published (meaning unpublished)."),
        *_coded("value_type", "Value type"),
        Column(
            "base_type",
            I32,
            "Value type of the stored codes of an encoded field (the encoding's coded_as; "
            "0 when not encoded).",
        ),
        Column("base_type_label", S, "Published value-type meaning of base_type."),
        *_coded("item_type", "Item type"),
        *_coded("strata", "Strata"),
        *_coded("instanced", "Instancing kind (0 singular, 1 defined, 2 variable)"),
        *_coded("arrayed", "Array flag"),
        *_coded("sexed", "Sexed"),
        Column("units", S, "Units of measurement, if any."),
        Column("main_category", I32, "Id of the field's main Showcase category."),
        Column("category_title", S, "Title of the main category, where known."),
        Column(
            "category_path",
            S,
            "Titles from the top of the category tree down to the main category, joined "
            "by ' > '; null when the tree or a title along it is unknown.",
        ),
        Column("encoding_id", I32, "Encoding (data-coding) id; 0 when not encoded."),
        Column("encoding_title", S, "Title of the encoding."),
        Column("instance_id", I32, "Instancing id (see instancing_url); 0 when singular."),
        Column("instance_min", I32, "Lowest instance index."),
        Column("instance_max", I32, "Highest instance index."),
        Column("instance_count", I32, "Number of instance indexes (max - min + 1)."),
        Column("array_min", I32, "Lowest array index."),
        Column("array_max", I32, "Highest array index."),
        Column("array_count", I32, "Number of array indexes (max - min + 1)."),
        Column("notes", S, "Showcase notes, with Showcase markup (<p>, ~F123~ links) kept."),
        Column(
            "notes_text",
            S,
            "The notes as plain text: tags removed, ~F123~ links written 'field 123'.",
        ),
        Column("debut", D, "Date the field first appeared in the Showcase."),
        Column("version", D, "Date of the field's current version."),
        Column("num_participants", I64, "Participants with data in the field."),
        Column("item_count", I64, "Number of data items held."),
        Column("showcase_order", F64, "Ordering of the field within its category."),
        Column("cost_do", I32, "Costing tier code as published (meaning unpublished)."),
        Column("cost_on", I32, "Costing tier code as published (meaning unpublished)."),
        Column("cost_sc", I32, "Costing tier code as published (meaning unpublished)."),
        Column(
            "legacy_title",
            S,
            "Title in the retired Data_Dictionary_Showcase.csv, when the field is listed there.",
        ),
        Column("canonical_url", S, "Showcase page of the field.", nullable=False),
        Column("encoding_url", S, "Showcase page of the field's encoding, if encoded."),
        Column("instancing_url", S, "Showcase page of the field's instancing, if any."),
    ),
    primary_key=("field_id",),
    foreign_keys=(
        ForeignKey("main_category", "ukb_category"),
        ForeignKey("encoding_id", "ukb_encoding"),
    ),
    label_column="title",
    url_column="canonical_url",
    facets=(
        "value_type_label",
        "item_type_label",
        "stability_label",
        "strata_label",
        "sexed_label",
        "category_title",
    ),
    text_columns=("title", "notes", "category_path"),
)

UKB_FIELD_ALIAS = Table(
    name="ukb_field_alias",
    source=SOURCE,
    description="Names a UK Biobank field goes by: its id, the column names of the common "
    "extract formats for each instance and array index (ukbconv CSV '21001-0.0', ukbconv "
    "R 'f.21001.0.0', RAP 'p21001_i0'), the 'f21001' and 'p21001' stems, and its title "
    "in the retired data dictionary when that differs. At most 2,048 instance/array "
    "combinations are listed per field (instance-major order); every current field fits.",
    columns=(
        Column("field_id", I32, "Field the alias names (ukb_field.field_id).", nullable=False),
        Column("alias", S, "The alias, as written in its format.", nullable=False),
        Column(
            "alias_kind",
            S,
            "field_id, f_prefix, rap_stem, ukbconv_csv, ukbconv_r, rap or legacy_title.",
            nullable=False,
        ),
    ),
    primary_key=("field_id", "alias"),
    foreign_keys=(ForeignKey("field_id", "ukb_field"),),
    label_column="alias",
    facets=("alias_kind",),
)

UKB_CATEGORY = Table(
    name="ukb_category",
    source=SOURCE,
    description="UK Biobank Showcase categories: the tree of schema 13 with titles from "
    "schema 3 or, where that is unavailable, from the category paths of the retired data "
    "dictionary (title_source says which).",
    columns=(
        Column("category_id", I32, "Showcase category id.", nullable=False),
        Column("title", S, "Category title, where known."),
        Column(
            "title_source",
            S,
            "Where the title came from: schema_3, legacy_leaf (the last element of a "
            "field's category path in the retired dictionary) or legacy_ancestor (the "
            "deepest path element shared by every legacy path below the category).",
        ),
        Column("parent_id", I32, "Parent category in the schema 13 tree; null at the top."),
        Column(
            "path",
            S,
            "Titles from the top of the tree down to this category, joined by ' > '; null "
            "when a title along the way is unknown or the category is not in the tree.",
        ),
        Column("depth", I32, "Depth in the tree (1 at the top); null when not in the tree."),
        Column("showcase_order", F64, "Ordering among its siblings (schema 13)."),
        Column("in_tree", B, "True when schema 13 places the category.", nullable=False),
        Column("child_count", I32, "Number of child categories.", nullable=False),
        Column("field_count", I32, "Fields whose main category this is.", nullable=False),
        Column("description", S, "Category description (schema 3), if available."),
        Column("notes", S, "Category notes (schema 3), if available."),
        Column("availability", I32, "Availability code (schema 3), if available."),
        Column("group_type", I32, "Group type code (schema 3), if available."),
        Column("canonical_url", S, "Showcase page of the category.", nullable=False),
    ),
    primary_key=("category_id",),
    foreign_keys=(ForeignKey("parent_id", "ukb_category"),),
    label_column="title",
    url_column="canonical_url",
    facets=("title_source", "in_tree"),
    text_columns=("title", "path", "description"),
)

UKB_ENCODING = Table(
    name="ukb_encoding",
    source=SOURCE,
    description="UK Biobank encodings (data-codings, Showcase schema 2): the value lists "
    "categorical fields are coded with.",
    columns=(
        Column("encoding_id", I32, "Encoding (data-coding) id.", nullable=False),
        Column("title", S, "Encoding title."),
        Column("availability", I32, "Availability code as published (meaning unpublished)."),
        Column("coded_as", I32, "Value type code of the stored codes."),
        Column("coded_as_label", S, "Published value-type meaning of coded_as."),
        Column("structure", I32, "Structure code: 1 flat list, 2 tree."),
        Column("structure_label", S, "Published meaning of structure (Flat or Tree)."),
        Column("num_members", I64, "Number of values the Showcase lists for the encoding."),
        Column("description", S, "Encoding description, with Showcase markup kept."),
        Column("description_text", S, "The description as plain text (see notes_text)."),
        Column("field_count", I32, "Fields coded with this encoding.", nullable=False),
        Column(
            "values_loaded",
            B,
            "True when the encoding's values were downloaded into ukb_encoding_value.",
            nullable=False,
        ),
        Column("value_count", I32, "Values loaded into ukb_encoding_value (0 when none)."),
        Column("canonical_url", S, "Showcase page of the encoding.", nullable=False),
    ),
    primary_key=("encoding_id",),
    label_column="title",
    url_column="canonical_url",
    facets=("structure_label", "coded_as_label", "values_loaded"),
    text_columns=("title", "description"),
)

UKB_ENCODING_VALUE = Table(
    name="ukb_encoding_value",
    source=SOURCE,
    description="Values of UK Biobank encodings, flat and hierarchical (codown.cgi "
    "downloads). Tree codings keep node_id and parent_id, so a code such as ICD-10 I21.9 "
    "(coding 19, value I219) can be followed up to its chapter. Meanings are untrusted "
    "source text.",
    columns=(
        Column("encoding_id", I32, "Encoding the value belongs to.", nullable=False),
        Column(
            "value_order",
            I32,
            "Position of the value in the published file (1-based).",
            nullable=False,
        ),
        Column(
            "value_key",
            S,
            "The value, or 'value@node_id' where the coding repeats a value (a flat "
            "coding uses value_order for node_id); unique within the encoding.",
            nullable=False,
        ),
        Column("value", S, "The coded value as stored in the data.", nullable=False),
        Column("meaning", S, "What the value means."),
        Column("node_id", I32, "Node id in a tree coding; null in flat codings."),
        Column("parent_id", I32, "Parent node id in a tree coding; null at the top level."),
        Column("selectable", B, "Whether the node may be a recorded value (tree codings)."),
        Column(
            "depth", I32, "Depth in the tree (1 at the top; 1 for flat codings).", nullable=False
        ),
        Column("canonical_url", S, "Showcase page of the encoding.", nullable=False),
    ),
    primary_key=("encoding_id", "value_order"),
    foreign_keys=(ForeignKey("encoding_id", "ukb_encoding"),),
    label_column="meaning",
    url_column="canonical_url",
    facets=("encoding_id", "selectable"),
    text_columns=("value", "meaning"),
)

register(UKB_FIELD, UKB_FIELD_ALIAS, UKB_CATEGORY, UKB_ENCODING, UKB_ENCODING_VALUE)

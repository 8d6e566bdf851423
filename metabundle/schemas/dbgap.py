"""dbGaP tables: studies, datasets, variables, coded values, summary statistics and
study documents, from the Advanced Search export and the public FTP tree.

Datasets, variables and documents are keyed within the study version they were
published in (``phs000286.v6.p2/phv00124545.v4.p2``): the same accession appears in
every study version that carries it. Text is untrusted source data.
"""

from __future__ import annotations

from metabundle.schemas.model import Column, ColumnType, ForeignKey, Table
from metabundle.schemas.registry import register
from metabundle.schemas.sources import SourceDescriptor, register_source

DBGAP = register_source(
    SourceDescriptor(
        name="dbgap",
        title="dbGaP (database of Genotypes and Phenotypes)",
        homepage="https://www.ncbi.nlm.nih.gov/gap/",
        order=1,
        license="NCBI website and data usage policies",
        license_url="https://www.ncbi.nlm.nih.gov/home/about/policies/",
        about=(
            "The database of Genotypes and Phenotypes (NCBI): studies, their phenotype "
            "datasets and variables, with coded values and the summary statistics of the "
            "variable reports. Individual-level data need controlled access; this is the "
            "public study metadata."
        ),
        citation=(
            "Tryka KA, Hao L, Sturcke A, et al. NCBI's Database of Genotypes and "
            "Phenotypes: dbGaP. Nucleic Acids Res. 2014;42(D1):D975-D979."
        ),
        main_tables=(
            "dbgap_study",
            "dbgap_dataset",
            "dbgap_variable",
            "dbgap_variable_value",
            "dbgap_variable_stat",
        ),
        examples=("systolic blood pressure", "smoking status", "phs000286"),
        charts="dbgap",
        search_columns=(
            Column(
                "study_id",
                ColumnType.STRING,
                "dbGaP versioned study accession the entity belongs to.",
            ),
        ),
    )
)

SOURCE = DBGAP.name

S, I32, I64, F64 = ColumnType.STRING, ColumnType.INT32, ColumnType.INT64, ColumnType.FLOAT64
B, D, J, SL = ColumnType.BOOL, ColumnType.DATE, ColumnType.JSON, ColumnType.STRING_LIST

STUDY_ACCESSION = Column(
    "study_accession",
    S,
    "Versioned accession of the study version the row was published in, e.g. "
    "phs000286.v6.p2 (its FTP folder).",
    nullable=False,
)
CANONICAL = "Public dbGaP page of the {}; null for a synthetic study, which has none."


def _synthetic(entity: str) -> Column:
    return Column(
        "synthetic",
        B,
        f"True when the {entity} belongs to a synthetic study: test data published in "
        "dbGaP's formats under an accession that dbGaP's own listing does not hold.",
        nullable=False,
    )


def _key(name: str, description: str) -> Column:
    return Column(name, S, description, nullable=False)


DBGAP_STUDY = Table(
    name="dbgap_study",
    source=SOURCE,
    description="One row per dbGaP study version that the Advanced Search export lists as "
    "current or that exists on the FTP (older versions are kept next to the current one).",
    columns=(
        Column(
            "study_accession",
            S,
            "Full versioned accession phs<6 digits>.v<version>.p<participant set>.",
            nullable=False,
        ),
        _key("study_base", "Accession without version, e.g. phs000007."),
        Column("version", I32, "Data version (the v number).", nullable=False),
        Column("participant_set", I32, "Participant set version (the p number).", nullable=False),
        Column(
            "is_current_version",
            B,
            "True for the version the Advanced Search export lists (or, for studies it "
            "does not list, the newest version read from the FTP).",
            nullable=False,
        ),
        _key("current_accession", "Accession of the study's current version."),
        _key("name", "Study name, whitespace collapsed."),
        Column(
            "description",
            S,
            "Study description as plain text (GapExchange's full text when available; the "
            "export cuts it to about 350 characters).",
        ),
        _key(
            "text_source",
            "Where name and description come from: gap_exchange, advanced_search, "
            "current_version (an older version described by the current one's text), "
            "var_report or accession.",
        ),
        Column(
            "acronyms",
            SL,
            "Acronym candidates given in parentheses in the name, e.g. MESA or JHS.",
        ),
        Column("parent_study_accession", S, "Versioned accession of the parent study, if any."),
        Column("parent_study_name", S, "Name of the parent study, if any."),
        Column("diseases", SL, "Diseases or focus (MeSH headings)."),
        Column("study_designs", SL, "Study design(s), e.g. Prospective Longitudinal Cohort."),
        Column("related_terms", SL, "Related MeSH entry terms listed by the export."),
        Column(
            "consent_groups",
            SL,
            "Consent groups as 'CODE --- Name', e.g. 'GRU --- General Research Use'.",
        ),
        Column("nih_institute", S, "NIH institute or center, e.g. NHLBI."),
        Column("markersets", SL, "Genotyping or sequencing marker sets (export, this version)."),
        Column("molecular_data_types", SL, "Molecular data types (export, this version)."),
        Column(
            "content_counts",
            J,
            "JSON object of the export's Study Content counts, e.g. "
            '{"phenotype datasets": 5, "variables": 20, "subjects": 343}.',
        ),
        Column("reported_dataset_count", I64, "Phenotype datasets reported by the export."),
        Column("reported_variable_count", I64, "Variables reported by the export."),
        Column("reported_subject_count", I64, "Subjects reported by the export."),
        Column("reported_sample_count", I64, "Samples reported by the export."),
        Column("ancestry", J, "JSON object: computed ancestry group → subject count."),
        Column("release_date", D, "Release date of this version (export)."),
        Column("embargo_release_date", D, "Embargo release date (export)."),
        Column("collections", SL, "dbGaP collections the study belongs to, with accessions."),
        Column("collection_accessions", SL, "Accessions of those collections."),
        Column("pubmed_ids", SL, "PubMed ids of the study's publications (GapExchange)."),
        Column("gap_create_date", D, "Creation date in the GapExchange file."),
        Column("gap_mod_date", D, "Last modification date in the GapExchange file."),
        Column(
            "in_advanced_search",
            B,
            "True when this version is the one the export lists.",
            nullable=False,
        ),
        Column(
            "has_gap_exchange",
            B,
            "True when this version's GapExchange XML was read.",
            nullable=False,
        ),
        Column("on_ftp", B, "True when the version has a folder on the FTP.", nullable=False),
        Column(
            "has_variables",
            B,
            "True when data dictionaries or variable reports of this version were read.",
            nullable=False,
        ),
        Column("dataset_count", I64, "Datasets read for this version.", nullable=False),
        Column("variable_count", I64, "Variables read for this version.", nullable=False),
        Column(
            "var_report_dataset_count",
            I64,
            "Datasets of this version with a variable report (summary statistics).",
            nullable=False,
        ),
        Column(
            "document_count", I64, "Documents listed by this version's GapExchange.", nullable=False
        ),
        _synthetic("study version"),
        Column("canonical_url", S, CANONICAL.format("study version")),
    ),
    primary_key=("study_accession",),
    foreign_keys=(ForeignKey("parent_study_accession", "dbgap_study"),),
    label_column="name",
    url_column="canonical_url",
    facets=("nih_institute", "is_current_version", "has_variables", "text_source"),
    text_columns=("name", "description"),
)

DATASET_ID = _key(
    "dataset_id", "Dataset within its study version: <study_accession>/<dataset_accession>."
)
VARIABLE_ID = _key(
    "variable_id", "Variable within its study version: <study_accession>/<variable_accession>."
)
VARIABLE_ACCESSION = _key("variable_accession", "Full variable accession, e.g. phv00124545.v4.p2.")
METADATA_SOURCE = _key(
    "metadata_source",
    "File the row was read from: data_dict, or var_report where the study version has no "
    "data dictionary for the dataset.",
)

DBGAP_DATASET = Table(
    name="dbgap_dataset",
    source=SOURCE,
    description="One row per phenotype dataset (pht) of each study version read, from its "
    "data dictionary (or its variable report when no dictionary exists).",
    columns=(
        DATASET_ID,
        STUDY_ACCESSION,
        _key("dataset_accession", "Full dataset accession, e.g. pht001920.v5.p2."),
        _key("dataset_base", "Dataset accession without version, e.g. pht001920."),
        Column("dataset_version", I32, "Dataset version (the v number).", nullable=False),
        _key(
            "table_study_accession",
            "Study the file itself names: differs from study_accession for sub-study tables "
            "a parent study publishes (e.g. SABRe tables under Framingham).",
        ),
        _key("name", "Dataset name from the file name, e.g. JHS_Subject."),
        Column("description", S, "Dataset description, if any."),
        Column("date_created", D, "Date the file was generated."),
        Column("unique_keys", SL, "Names of the variables that form the dataset's key."),
        METADATA_SOURCE,
        _key("source_file", "Name of the file the dataset was read from."),
        _key(
            "text_encoding",
            "Encoding the file was read with: utf-8, or cp1252 for files that declare UTF-8 "
            "but hold Windows-1252 bytes.",
        ),
        Column("variable_count", I64, "Number of variables read.", nullable=False),
        Column(
            "has_var_report",
            B,
            "True when a variable report (summary statistics) was read.",
            nullable=False,
        ),
        _synthetic("dataset"),
        Column("canonical_url", S, CANONICAL.format("dataset")),
    ),
    primary_key=("dataset_id",),
    foreign_keys=(ForeignKey("study_accession", "dbgap_study"),),
    label_column="name",
    url_column="canonical_url",
    facets=("study_accession", "metadata_source"),
    text_columns=("name", "description"),
)

DBGAP_VARIABLE = Table(
    name="dbgap_variable",
    source=SOURCE,
    description="One row per phenotype variable (phv) of each dataset read.",
    columns=(
        VARIABLE_ID,
        STUDY_ACCESSION,
        _key("dataset_id", "The variable's dataset (dbgap_dataset.dataset_id)."),
        _key("dataset_accession", "Full accession of the variable's dataset."),
        VARIABLE_ACCESSION,
        _key("variable_base", "Variable accession without version, e.g. phv00124545."),
        Column("variable_version", I32, "Variable version (the v number).", nullable=False),
        _key("name", "Variable name as in the data file, e.g. SUBJECT_ID."),
        Column("description", S, "Variable description."),
        Column("type", S, "Type as the submitter reported it (free text, e.g. encoded value)."),
        Column("units", S, "Units of measurement."),
        Column("logical_min", S, "Logical minimum as given (text)."),
        Column("logical_max", S, "Logical maximum as given (text)."),
        Column("comment", S, "Submitter comment."),
        Column("collection_interval", S, "Collection interval (coll_interval)."),
        Column("value_count", I32, "Number of coded values listed.", nullable=False),
        Column(
            "is_unique_key",
            B,
            "True when the variable is part of the dataset's key.",
            nullable=False,
        ),
        Column(
            "has_stats",
            B,
            "True when summary statistics (dbgap_variable_stat) exist.",
            nullable=False,
        ),
        METADATA_SOURCE,
        _synthetic("variable"),
        Column("canonical_url", S, CANONICAL.format("variable")),
    ),
    primary_key=("variable_id",),
    foreign_keys=(
        ForeignKey("study_accession", "dbgap_study"),
        ForeignKey("dataset_id", "dbgap_dataset"),
    ),
    label_column="name",
    url_column="canonical_url",
    facets=("study_accession", "type", "units"),
    text_columns=("name", "description"),
)

DBGAP_VARIABLE_VALUE = Table(
    name="dbgap_variable_value",
    source=SOURCE,
    description="Coded values of variables as their data dictionaries list them "
    "(code → label), in file order.",
    columns=(
        VARIABLE_ID,
        Column(
            "value_order", I32, "Position of the value in the dictionary (from 1).", nullable=False
        ),
        STUDY_ACCESSION,
        VARIABLE_ACCESSION,
        Column("code", S, "The code as stored in the data (absent for label-only lists)."),
        Column("label", S, "What the code means."),
        Column(
            "is_replacement",
            B,
            "True when dbGaP replaced the original value (e.g. de-identified sites).",
            nullable=False,
        ),
    ),
    primary_key=("variable_id", "value_order"),
    foreign_keys=(ForeignKey("variable_id", "dbgap_variable"),),
    label_column="label",
    text_columns=("label",),
)

CONSENT_GROUP = _key("consent_group", "total for all subjects, or c<N> for consent group N.")
CONSENT_NUMBER = Column("consent_number", I32, "Consent group number; null for total.")

DBGAP_VARIABLE_STAT = Table(
    name="dbgap_variable_stat",
    source=SOURCE,
    description="Summary statistics of variables from variable reports (var_report.xml): one "
    "row per variable for all subjects (total) and one per consent group.",
    columns=(
        VARIABLE_ID,
        CONSENT_GROUP,
        CONSENT_NUMBER,
        STUDY_ACCESSION,
        _key("dataset_id", "The variable's dataset (dbgap_dataset.dataset_id)."),
        VARIABLE_ACCESSION,
        Column("calculated_type", S, "Type dbGaP computed from the data, e.g. enum_integer."),
        Column("n", I64, "Number of subjects with a value."),
        Column("nulls", I64, "Number of subjects without a value."),
        Column("mean", F64, "Mean of numeric values."),
        Column("median", F64, "Median of numeric values."),
        Column("sd", F64, "Standard deviation of numeric values."),
        Column("min", F64, "Minimum of numeric values."),
        Column("max", F64, "Maximum of numeric values."),
        Column("mean_count", F64, "For enumerated variables: mean count per value."),
        Column("median_count", F64, "For enumerated variables: median count per value."),
        Column("min_count", I64, "For enumerated variables: smallest count of a value."),
        Column("max_count", I64, "For enumerated variables: largest count of a value."),
        Column("male_count", I64, "Subjects with a value who are male, if reported."),
        Column("female_count", I64, "Subjects with a value who are female, if reported."),
    ),
    primary_key=("variable_id", "consent_group"),
    foreign_keys=(ForeignKey("variable_id", "dbgap_variable"),),
    facets=("consent_group", "calculated_type"),
    allow_empty=True,  # studies without var_reports or documents are a valid selection
)

DBGAP_VARIABLE_VALUE_COUNT = Table(
    name="dbgap_variable_value_count",
    source=SOURCE,
    description="Value counts from variable reports: enumerated values (enum) and the most "
    "frequent values of other variables (example), per variable and consent group.",
    columns=(
        VARIABLE_ID,
        CONSENT_GROUP,
        Column("value_order", I32, "Position in the report (from 1).", nullable=False),
        CONSENT_NUMBER,
        STUDY_ACCESSION,
        _key("dataset_id", "The variable's dataset (dbgap_dataset.dataset_id)."),
        VARIABLE_ACCESSION,
        _key("kind", "enum (an enumerated value) or example (a frequent value)."),
        Column("code", S, "Code of an enumerated value, if given."),
        Column("value", S, "The value or its label."),
        Column("count", I64, "Number of subjects with the value."),
    ),
    primary_key=("variable_id", "consent_group", "value_order"),
    foreign_keys=(ForeignKey("variable_id", "dbgap_variable"),),
    label_column="value",
    facets=("kind", "consent_group"),
    allow_empty=True,  # studies without var_reports or documents are a valid selection
)

DBGAP_DOCUMENT = Table(
    name="dbgap_document",
    source=SOURCE,
    description="Study documents (protocols, questionnaires, manuals) a GapExchange file "
    "lists. Only titles and metadata are stored; the documents' contents are not indexed.",
    columns=(
        _key("document_id", "Document within its study version: <study_accession>/<phd>."),
        STUDY_ACCESSION,
        _key("document_accession", "Document accession, e.g. phd001495.1."),
        _key("document_base", "Document accession without version, e.g. phd001495."),
        Column("document_version", I32, "Document version.", nullable=False),
        _key("title", "Display name (falling back to description, then file name)."),
        Column("description", S, "Document description."),
        Column("file_name", S, "Original file name, e.g. LOAD_manual.pdf."),
        Column("document_type", S, "Document type, e.g. protocol or questionnaire."),
        Column("create_date", D, "Creation date."),
        Column("mod_date", D, "Last modification date."),
        Column("display_status", S, "Display status, e.g. public."),
        Column(
            "annotated_variable_count",
            I32,
            "Number of variables the GapExchange annotations link to sections of this document.",
            nullable=False,
        ),
        Column(
            "content_indexed",
            B,
            "Always false: the document's contents are not indexed, only its title.",
            nullable=False,
        ),
        Column("xml_url", S, "URL of the document's XML rendering, if given."),
        Column("canonical_url", S, CANONICAL.format("document"), nullable=False),
    ),
    primary_key=("document_id",),
    foreign_keys=(ForeignKey("study_accession", "dbgap_study"),),
    label_column="title",
    url_column="canonical_url",
    facets=("study_accession", "document_type"),
    text_columns=("title", "description"),
    allow_empty=True,  # studies without var_reports or documents are a valid selection
)

DBGAP_UNBUILT_STUDY = Table(
    name="dbgap_unbuilt_study",
    source=SOURCE,
    description="One row per study that the upstream lists (Advanced Search export or FTP "
    "tree) but this release's study selection left out; empty in a complete build. "
    "It lets an answer say 'listed by dbGaP, not built into this release' instead of "
    "'no such study'.",
    columns=(
        _key("study_base", "Accession without version, e.g. phs000179."),
        Column("current_accession", S, "Versioned accession the export lists as current."),
        Column("name", S, "Study name as the export gives it."),
        Column("acronyms", SL, "Acronym candidates given in parentheses in the name."),
        Column("in_advanced_search", B, "True when the export lists the study.", nullable=False),
        Column("on_ftp", B, "True when the study has a folder on the FTP.", nullable=False),
    ),
    primary_key=("study_base",),
    label_column="name",
    allow_empty=True,
)

register(
    DBGAP_STUDY,
    DBGAP_UNBUILT_STUDY,
    DBGAP_DATASET,
    DBGAP_VARIABLE,
    DBGAP_VARIABLE_VALUE,
    DBGAP_VARIABLE_STAT,
    DBGAP_VARIABLE_VALUE_COUNT,
    DBGAP_DOCUMENT,
)

"""All of Us tables: the public Data Browser catalogue as items, identifiers, edges, links.

Every searchable thing the Data Browser shows is one ``aou_item`` row with an opaque,
stable ``result_id`` (``aou.doc.`` + 24 hex digits of a SHA-256 over its kind and native
key): survey modules, PFHH topics, questions, answers, Data Browser domains, EHR
concepts (from the release's OMOP vocabulary) and program physical measurements.
Questions, EHR concepts and physical measurements are variables; modules, topics and
domains are navigation hits and answers are support hits (``is_variable`` false).

Participant counts come only from the Data Browser public API at build time; a build
that did not ask it (an offline mirror build) leaves them null and says why in
``count_status``. Text columns are untrusted source data.
"""

from __future__ import annotations

from types import MappingProxyType

from metabundle.schemas.model import Column, ColumnType, ForeignKey, Table
from metabundle.schemas.omop import CONCEPT_DOC_COLUMNS
from metabundle.schemas.registry import register
from metabundle.schemas.sources import SourceDescriptor, register_source

AOU = register_source(
    SourceDescriptor(
        name="aou",
        title="All of Us Research Program public Data Browser",
        homepage="https://databrowser.researchallofus.org/",
        order=3,
        license="All of Us public Data Browser terms",
        license_url="https://databrowser.researchallofus.org/",
        about=(
            "The All of Us Research Program's public Data Browser catalogue: survey "
            "modules, questions and answers, physical measurements and EHR concepts, with "
            "their OMOP concept ids."
        ),
        citation=(
            'The All of Us Research Program Investigators. The "All of Us" Research '
            "Program. N Engl J Med. 2019;381:668-676."
        ),
        main_tables=("aou_item", "aou_item_edge", "aou_item_identifier"),
        examples=("how often do you drink alcohol", "height", "type 2 diabetes"),
        search_columns=(
            *CONCEPT_DOC_COLUMNS,
            Column(
                "variable_type",
                ColumnType.STRING,
                "All of Us variable type: ehr, survey, physical_measurement or fitbit.",
            ),
            Column(
                "role", ColumnType.STRING, "All of Us EHR role: standard, source or classification."
            ),
        ),
        folded_kinds=MappingProxyType({"answer": "question"}),
        aliases=("all of us", "all of us research program", "aou"),
        search_tool="search_aou_catalog",
    )
)

SOURCE = AOU.name

S, I32, I64, B, SL = (
    ColumnType.STRING,
    ColumnType.INT32,
    ColumnType.INT64,
    ColumnType.BOOL,
    ColumnType.STRING_LIST,
)


def _result_id(description: str) -> Column:
    return Column("result_id", S, description, nullable=False)


AOU_ITEM = Table(
    name="aou_item",
    source=SOURCE,
    description="One row per All of Us public Data Browser item: survey modules, survey "
    "topics, questions and answers, Data Browser domains, program physical measurements, "
    "and EHR concepts: the valid concepts of the Condition, Drug, Measurement and Procedure "
    "domains in the build's OMOP vocabulary (the public metadata does not say which of "
    "them have All of Us data). Text is untrusted source data; counts are aggregate "
    "public Data Browser counts or null.",
    columns=(
        _result_id("Opaque stable id: aou.doc. + 24 hex digits of sha256(kind, native_id)."),
        Column(
            "kind",
            S,
            "survey_module, survey_topic, question, answer, domain, ehr_concept or "
            "physical_measurement.",
            nullable=False,
        ),
        Column(
            "search_role",
            S,
            "variable (questions, EHR concepts, physical measurements), navigation (modules, "
            "topics, domains) or support (answers).",
            nullable=False,
        ),
        Column(
            "is_variable",
            B,
            "True only for variables; navigation and support items must not be described "
            "as variables.",
            nullable=False,
        ),
        Column(
            "variable_type",
            S,
            "High-level data type: survey, ehr, physical_measurement or fitbit.",
            nullable=False,
        ),
        Column(
            "variable_class",
            S,
            "Kind of variable: single_select or multi_select for questions, continuous or "
            "categorical for physical measurements, the OMOP concept class for EHR concepts.",
        ),
        Column(
            "title", S, "Display title (question text, answer text, concept name).", nullable=False
        ),
        Column(
            "subtitle",
            S,
            "Context shown under the title: the module (and topic) of a survey item, the "
            "question of an answer, the domain and vocabulary of a concept.",
        ),
        Column(
            "description",
            S,
            "Longer text: module and domain descriptions, a question's branching logic.",
        ),
        Column(
            "domain",
            S,
            "OMOP domain the data lands in (Condition, Drug, Measurement, Procedure, "
            "Observation for surveys) or the Data Browser domain of a domain item.",
        ),
        Column("vocabulary", S, "OMOP vocabulary of the item's concept (PPI for surveys)."),
        Column("concept_id", I64, "OMOP concept id of the item, if it has one."),
        Column("concept_code", S, "Code of the concept, e.g. Smoking_100CigsLifetime, 8462-4."),
        Column(
            "native_id",
            S,
            "The item's key within its kind: a concept id, question:answer concept ids, or a "
            "domain id.",
            nullable=False,
        ),
        Column("standard_concept", S, "OMOP standard flag of an EHR concept: S, C or null."),
        Column(
            "ehr_role",
            S,
            "Role of an EHR concept: standard, source (non-standard, mapped from) or "
            "classification.",
        ),
        Column("concept_class", S, "OMOP concept class of an EHR concept."),
        Column("survey_concept_id", I64, "Concept id of the survey module of a survey item."),
        Column("survey_name", S, "Name of the survey module of a survey item."),
        Column("topic", S, "Survey topic (section) a question is listed under, if any."),
        Column(
            "question_paths",
            SL,
            "Data Browser question paths (dot-separated question.answer.question concept "
            "ids) under which the question is asked; one per branch.",
        ),
        Column(
            "question_path_text",
            S,
            "The shortest question path spelled out: parent question > answer > question.",
        ),
        Column(
            "answer_value",
            I64,
            "Numeric recode of an answer from the omop2survey answer key (negative and "
            "9xx codes mark skips and free entry).",
        ),
        Column(
            "select_all",
            B,
            "Select-all-that-apply: on an answer, from the answer key; on a question, true "
            "when any of its answers is.",
        ),
        Column(
            "position",
            I32,
            "Order among its siblings as the Data Browser lists them (module order, "
            "question order, answer order).",
        ),
        Column(
            "parent_result_id",
            S,
            "result_id of the parent item: module of a question or topic, question of an "
            "answer, domain of an EHR concept or physical measurement.",
        ),
        Column(
            "child_count",
            I32,
            "Number of child items (questions of a module or topic, answers of a question, "
            "concepts of a domain).",
            nullable=False,
        ),
        Column(
            "participant_count",
            I64,
            "Participants with data, from the public Data Browser API; null unless "
            "count_status is from_public_api.",
        ),
        Column(
            "count_status",
            S,
            "Why participant_count is what it is: from_public_api, unavailable_offline (built "
            "from a mirror without the API), api_unreachable, or not_collected (the build "
            "does not ask the API for this kind).",
            nullable=False,
        ),
        Column("count_source", S, "Public API endpoint the count was read from."),
        Column("canonical_url", S, "Public Data Browser page of the item.", nullable=False),
    ),
    primary_key=("result_id",),
    foreign_keys=(ForeignKey("parent_result_id", "aou_item"),),
    label_column="title",
    url_column="canonical_url",
    facets=("kind", "search_role", "variable_type", "domain", "vocabulary", "ehr_role"),
    text_columns=("title", "subtitle", "description", "question_path_text"),
)

AOU_ITEM_IDENTIFIER = Table(
    name="aou_item_identifier",
    source=SOURCE,
    description="Exact identifiers and aliases that resolve to an All of Us item before any "
    "ranking: concept ids, concept codes, vocabulary-qualified codes (loinc:8462-4) and "
    "Data Browser route names. One identifier may resolve to several items.",
    columns=(
        _result_id("Item the identifier resolves to (aou_item)."),
        Column("identifier", S, "The identifier as the source writes it.", nullable=False),
        Column(
            "identifier_kind",
            S,
            "concept_id, concept_code, vocabulary_code or alias.",
            nullable=False,
        ),
        Column("normalized", S, "Lower-cased, trimmed identifier used for lookup.", nullable=False),
    ),
    primary_key=("result_id", "identifier_kind", "identifier"),
    foreign_keys=(ForeignKey("result_id", "aou_item"),),
    facets=("identifier_kind",),
    text_columns=("identifier",),
)

AOU_ITEM_EDGE = Table(
    name="aou_item_edge",
    source=SOURCE,
    description="Directed relations between All of Us items: question to answer, branching "
    "from a parent question to a sub-question, topic membership, family history roll-ups, "
    "and OMOP concept relationships (Maps to, Subsumes) between EHR concepts.",
    columns=(
        Column("from_result_id", S, "Item the edge starts from (aou_item).", nullable=False),
        Column("to_result_id", S, "Item the edge points to (aou_item).", nullable=False),
        Column(
            "edge_kind",
            S,
            "has_answer, branches_to, topic_has_question, family_member_answer, maps_to or "
            "subsumes.",
            nullable=False,
        ),
        Column(
            "qualifier",
            S,
            "What distinguishes parallel edges: the answer concept id a branch is taken on, "
            "the condition concept a family history answer counts towards; empty otherwise.",
            nullable=False,
        ),
        Column(
            "via_result_id",
            S,
            "The answer item of the from-question the edge goes through: the answer that "
            "opens a branch, the condition answer of a family history roll-up.",
        ),
        Column("position", I32, "Order of the edge among its siblings (answer order)."),
    ),
    primary_key=("from_result_id", "edge_kind", "to_result_id", "qualifier"),
    foreign_keys=(
        ForeignKey("from_result_id", "aou_item"),
        ForeignKey("to_result_id", "aou_item"),
    ),
    facets=("edge_kind",),
)

AOU_ITEM_LINK = Table(
    name="aou_item_link",
    source=SOURCE,
    description="Public pages and endpoints about an All of Us item: its Data Browser page, "
    "survey PDFs, the public Data Browser API call for its counts and its Athena page.",
    columns=(
        _result_id("Item the link belongs to (aou_item)."),
        Column(
            "link_kind",
            S,
            "data_browser, survey_pdf, survey_pdf_spanish, public_api or athena.",
            nullable=False,
        ),
        Column("url", S, "The link.", nullable=False),
    ),
    primary_key=("result_id", "link_kind", "url"),
    foreign_keys=(ForeignKey("result_id", "aou_item"),),
    url_column="url",
    facets=("link_kind",),
)

AOU_UNIT = Table(
    name="aou_unit",
    source=SOURCE,
    description="Unit strings found in All of Us EHR measurements and the OMOP unit concept "
    "each maps to (Data Browser unit_map).",
    columns=(
        Column("unit_source_value", S, "The unit as written in source data.", nullable=False),
        Column(
            "unit_concept_id", I64, "OMOP unit concept it maps to (0: no unit).", nullable=False
        ),
        Column("unit_concept_name", S, "Name of the unit concept, when the OMOP tables have it."),
    ),
    primary_key=("unit_source_value", "unit_concept_id"),
    label_column="unit_source_value",
    text_columns=("unit_source_value", "unit_concept_name"),
)

register(AOU_ITEM, AOU_ITEM_IDENTIFIER, AOU_ITEM_EDGE, AOU_ITEM_LINK, AOU_UNIT)

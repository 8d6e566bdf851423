"""Read and check the small All of Us CSVs (a few thousand rows each).

Each file is read with the standard library so that a bad value is reported with its
line: a missing column, a non-integer id, an empty required value, an unknown row type
or a malformed question path is a :class:`ParseError` naming file, line and column.
``NULL`` and empty cells are nulls. The result is an Arrow table of the declared
columns only, ready to be scanned by DuckDB.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from metabundle.errors import ParseError
from metabundle.sources.aou.fetch import ANSWER_KEY, csv_key
from metabundle.sources.base import RawSnapshot

NAME = "aou"
INT, STR = pa.int64(), pa.string()
NULLS = frozenset({"", "NULL"})
PATH = re.compile(r"\d+(\.\d+)*\.?")


@dataclass(frozen=True)
class CsvSpec:
    """The columns a file must have, their types, and which may not be empty; ``view``
    is the name the parse step scans it by."""

    key: str
    view: str
    columns: Mapping[str, pa.DataType]
    required: frozenset[str]
    choices: Mapping[str, frozenset[str]] = field(default_factory=dict)
    patterns: Mapping[str, re.Pattern[str]] = field(default_factory=dict)


def _spec(
    key: str,
    view: str,
    columns: dict[str, pa.DataType],
    required: tuple[str, ...],
    choices: dict[str, frozenset[str]] | None = None,
    patterns: dict[str, re.Pattern[str]] | None = None,
) -> CsvSpec:
    return CsvSpec(key, view, columns, frozenset(required), choices or {}, patterns or {})


SURVEY_MODULE = _spec(
    csv_key("survey_module.csv"),
    "in_module",
    {"concept_id": INT, "name": STR, "description": STR, "order_number": INT},
    ("concept_id", "name"),
)
SURVEY_METADATA = _spec(
    csv_key("survey_metadata.csv"),
    "in_metadata",
    {
        "id": INT,
        "concept_id": INT,
        "concept_name": STR,
        "concept_code": STR,
        "survey_concept_id": INT,
        "path": STR,
        "order_number": INT,
        "question_string": STR,
        "type": STR,
        "branching_logic": STR,
    },
    ("id", "concept_id", "concept_name", "survey_concept_id", "path", "type"),
    choices={"type": frozenset({"QUESTION", "TOPIC"})},
    patterns={"path": PATH},
)
PFHH_QA = _spec(
    csv_key("pfhh_qa_metadata.csv"),
    "in_pfhh",
    {"question_concept_id": INT, "answer_concept_id": INT, "answer": STR},
    ("question_concept_id", "answer_concept_id", "answer"),
)
FMH = _spec(
    csv_key("fmh_metadata.csv"),
    "in_fmh",
    {
        "observation_source_concept_id": INT,
        "value_source_concept_id": INT,
        "concept_name": STR,
        "fmh_concepts_to_count": STR,
    },
    ("observation_source_concept_id", "value_source_concept_id", "fmh_concepts_to_count"),
    patterns={"fmh_concepts_to_count": re.compile(r"\d+(,\d+)*")},
)
DOMAIN_INFO = _spec(
    csv_key("domain_info.csv"),
    "in_domain",
    {"domain_id": STR, "name": STR, "description": STR},
    ("domain_id", "name"),
)
UNIT_MAP = _spec(
    csv_key("unit_map.csv"),
    "in_unit",
    {"unit_concept_id": INT, "unit_source_value": STR},
    ("unit_concept_id", "unit_source_value"),
)
ANSWER_KEY_SPEC = _spec(
    ANSWER_KEY,
    "in_answer_key",
    {
        "question_concept_id": INT,
        "answer_concept_id": INT,
        "answer": STR,
        "answer_numeric": INT,
        "answer_text": STR,
        "select_all": INT,
    },
    ("question_concept_id", "answer_concept_id"),
)
DATA_BROWSER_FILES = (SURVEY_MODULE, SURVEY_METADATA, PFHH_QA, FMH, DOMAIN_INFO, UNIT_MAP)


def _value(spec: CsvSpec, column: str, raw: str | None, line: int) -> object:
    text = None if raw is None or raw.strip() in NULLS else raw
    if text is None:
        if column in spec.required:
            raise ParseError(NAME, spec.key, f"column {column} is empty", line=line)
        return None
    if spec.columns[column] == INT:
        try:
            return int(text.strip())
        except ValueError:
            raise ParseError(
                NAME, spec.key, f"column {column} has {text!r}, not an integer", line=line
            ) from None
    if column in spec.choices and text not in spec.choices[column]:
        allowed = ", ".join(sorted(spec.choices[column]))
        raise ParseError(
            NAME, spec.key, f"column {column} has {text!r}, expected one of {allowed}", line=line
        )
    if column in spec.patterns and not spec.patterns[column].fullmatch(text):
        raise ParseError(NAME, spec.key, f"column {column} is malformed: {text!r}", line=line)
    return text


def read_csv_text(spec: CsvSpec, text: str) -> pa.Table:
    """Parse one CSV document against ``spec``."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in spec.columns if c not in (reader.fieldnames or [])]
    if missing:
        raise ParseError(NAME, spec.key, f"the header lacks column {missing[0]}", line=1)
    columns: dict[str, list[object]] = {c: [] for c in spec.columns}
    try:
        for row in reader:
            for column in spec.columns:
                columns[column].append(_value(spec, column, row[column], reader.line_num))
    except csv.Error as error:
        raise ParseError(NAME, spec.key, str(error), line=reader.line_num) from None
    if not columns[next(iter(spec.columns))]:
        raise ParseError(NAME, spec.key, "the file has a header but no rows")
    return pa.table({c: pa.array(v, spec.columns[c]) for c, v in columns.items()})


def read_csv(snapshot: RawSnapshot, spec: CsvSpec) -> pa.Table:
    """Parse the snapshot's copy of ``spec.key`` (UTF-8, with or without a BOM)."""
    path = snapshot.file(spec.key).path
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise ParseError(NAME, spec.key, f"not UTF-8 ({error.reason})") from None
    return read_csv_text(spec, text)


def empty(spec: CsvSpec) -> pa.Table:
    """A table with the spec's columns and no rows (for an absent optional file)."""
    return pa.table({c: pa.array([], t) for c, t in spec.columns.items()})

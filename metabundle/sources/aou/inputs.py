"""Read and check the small All of Us CSVs (a few thousand rows each).

Each file is read with the standard library so that a problem is reported with its
line. A bad *file* is a :class:`ParseError` naming file and line: a missing column, CSV
that does not parse (a quote left open), or a last record cut short (the file ends
inside it, without a line break, as a truncated download does). A bad *record* in an
otherwise good file is set aside (quarantined) with its line and reason, and every
other record loads: a record with more or fewer cells than the header, a non-integer
id, an empty required value, an unknown row type or a malformed question path.
``NULL`` and empty cells are nulls. The result is an Arrow table of the declared
columns only, ready to be scanned by DuckDB.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import pyarrow as pa

from metabundle.errors import ParseError
from metabundle.sources.aou.fetch import ANSWER_KEY, csv_key
from metabundle.sources.base import ParseContext
from metabundle.sources.records import BadRecord, CsvRecords, SetAside

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


def _value(spec: CsvSpec, column: str, raw: str | None) -> object:
    text = None if raw is None or raw.strip() in NULLS else raw
    if text is None:
        if column in spec.required:
            raise BadRecord(f"column {column} is empty")
        return None
    if spec.columns[column] == INT:
        try:
            return int(text.strip())
        except ValueError:
            raise BadRecord(f"column {column} has {text!r}, not an integer") from None
    if column in spec.choices and text not in spec.choices[column]:
        allowed = ", ".join(sorted(spec.choices[column]))
        raise BadRecord(f"column {column} has {text!r}, expected one of {allowed}")
    if column in spec.patterns and not spec.patterns[column].fullmatch(text):
        raise BadRecord(f"column {column} is malformed: {text!r}")
    return text


def _positions(spec: CsvSpec, header: Sequence[str] | None) -> dict[str, int]:
    """Where each declared column is in ``header``; a missing one fails the file."""
    found = list(header or [])
    missing = [c for c in spec.columns if c not in found]
    if missing:
        raise ParseError(NAME, spec.key, f"the header lacks column {missing[0]}", line=1)
    return {column: found.index(column) for column in spec.columns}


def _record(
    spec: CsvSpec, positions: Mapping[str, int], width: int, cells: list[str]
) -> dict[str, object]:
    """The declared columns of one record, converted; :class:`BadRecord` if malformed."""
    if len(cells) != width:
        raise BadRecord(f"the record has {len(cells)} cells, the header {width}")
    return {column: _value(spec, column, cells[index]) for column, index in positions.items()}


def read_csv_text(spec: CsvSpec, text: str, set_aside: SetAside) -> pa.Table:
    """Parse one CSV document against ``spec``, quarantining malformed records through
    ``set_aside``."""
    document = CsvRecords(text, NAME, spec.key)
    header = document.header()
    positions = _positions(spec, header)
    convert = partial(_record, spec, positions, len(header or []))
    columns: dict[str, list[object]] = {c: [] for c in spec.columns}
    for _line, row in document.converted(convert, set_aside):
        for column, value in row.items():
            columns[column].append(value)
    if not columns[next(iter(spec.columns))]:
        raise ParseError(NAME, spec.key, "the file has a header but no rows")
    return pa.table({c: pa.array(v, spec.columns[c]) for c, v in columns.items()})


def read_csv(ctx: ParseContext, spec: CsvSpec) -> pa.Table:
    """Parse the snapshot's copy of ``spec.key`` (UTF-8, with or without a BOM)."""
    path = ctx.snapshot.file(spec.key).path
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise ParseError(NAME, spec.key, f"not UTF-8 ({error.reason})") from None
    return read_csv_text(
        spec, text, lambda reason, line: ctx.quarantine(spec.key, reason, line=line)
    )


def empty(spec: CsvSpec) -> pa.Table:
    """A table with the spec's columns and no rows (for an absent optional file)."""
    return pa.table({c: pa.array([], t) for c, t in spec.columns.items()})

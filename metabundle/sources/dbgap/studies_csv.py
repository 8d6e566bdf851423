"""The dbGaP Advanced Search "Studies" CSV export: one row per study, its current version.

The export is what the "Save CSV" button of https://www.ncbi.nlm.nih.gov/gap/advanced_search/
writes; dbGaP documents no URL or API for it (the download is built in the browser
session). A build against the public upstream therefore reads the snapshot of the
export that the NIH NCPI dataset catalog publishes (:data:`DEFAULT_PUBLIC_URL`), unless
``METABUNDLE_DBGAP_STUDIES_CSV_URL`` names a fresher one (any http(s) or ``file://``
URL); a mirror serves it at ``dbgap/advanced_search/studies.csv``.

Columns: accession, name, description (cut to about 350 characters by dbGaP),
Parent study (``Name (phs….v….p…)`` or ``Not Applicable``), Study Disease/Focus (MeSH
headings, ``;``-separated), Study Design, Study Markerset and Study Molecular Data
Type (``, ``-separated), Study Content (``5 phenotype datasets, 20 variables, …``),
Ancestry (computed) (``European (990), African (34)``), NIH Institute, Study Consent
(``CODE --- Name, CODE --- Name``), Release Date, Embargo Release Date (ISO dates),
Related Terms and Collections (``;``-separated). Text carries HTML entities
(``Women&#39;s``) and line-wrap runs of spaces; both are cleaned here.

A record is one study's row. A malformed record (more or fewer cells than the header,
an accession that is not ``phs….v….p…``, a date that is not ``YYYY-MM-DD``) is set
aside through ``set_aside`` with its line, and every other study loads. The *file* is
bad, and fails naming its line, when its header lacks a column, its CSV does not parse
(a quote left open), a study is listed twice, or its last record is malformed and the
file ends inside it without a line break (a download cut short).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import date
from pathlib import Path
from typing import TypeVar

from pydantic import Field

from metabundle.errors import ParseError
from metabundle.settings import Settings
from metabundle.sources.dbgap.accessions import StudyVersion
from metabundle.sources.dbgap.rows import Row, SetAside
from metabundle.sources.dbgap.text import clean
from metabundle.sources.dbgap.xmlread import SOURCE
from metabundle.sources.records import BadRecord, CsvRecords

MIRROR_PATH = "dbgap/advanced_search/studies.csv"
DEFAULT_PUBLIC_URL = (
    "https://raw.githubusercontent.com/NIH-NCPI/ncpi-dataset-catalog/main/"
    "catalog-build/source/2026-01-27-dbgap-advanced-search.csv"
)


class DbgapSettings(Settings):
    """dbGaP options (``METABUNDLE_DBGAP_*``)."""

    dbgap_studies_csv_url: str = Field(
        default=DEFAULT_PUBLIC_URL,
        description="Where the Advanced Search export is read from without a mirror.",
    )


COLUMNS = (
    "accession",
    "name",
    "description",
    "Parent study",
    "Study Disease/Focus",
    "Study Design",
    "Study Markerset",
    "Study Molecular Data Type",
    "Study Content",
    "Ancestry (computed)",
    "NIH Institute",
    "Study Consent",
    "Release Date",
    "Embargo Release Date",
    "Related Terms",
    "Collections",
)
MISSING = frozenset({"not applicable", "not provided"})
NAMED_ACCESSION_RE = re.compile(r"(?P<name>.*?)\s*\((?P<accession>phs\d{6}\.v\d+\.p\d+)\)")
CONSENT_SPLIT_RE = re.compile(r",\s*(?=[^\s,]+ --- )")
COMMA_OUTSIDE_PARENS_RE = re.compile(r",\s*(?![^()]*\))")
SEMICOLON_RE = re.compile(r"\s*;\s*")
COUNT_RE = re.compile(r"(\d+)\s+(.+)")
ANCESTRY_RE = re.compile(r"\s*([^,()]+?)\s*\((\d+)\)")
T = TypeVar("T")
ACRONYM_RE = re.compile(r"\(([A-Za-z][A-Za-z0-9&/+.-]{2,29})\)")


def read_studies_csv(path: Path, name: str, set_aside: SetAside) -> dict[str, Row]:
    """Study base → the cleaned row of its current version; malformed records are set
    aside with their line."""
    return _read(path, name, _study_row, set_aside)


def export_versions(path: Path, name: str) -> dict[str, tuple[StudyVersion, date | None]]:
    """Study base → (current version, release date): the little the fetch step needs.
    Malformed records are skipped here; the parse step quarantines them."""
    return _read(path, name, _version_and_release, lambda _reason, _line: None)


def _read(
    path: Path, name: str, convert: Callable[[dict[str, str]], T], set_aside: SetAside
) -> dict[str, T]:
    """Each good record of the export converted, by study base (see the module
    docstring for what is set aside and what fails the file)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise ParseError(SOURCE, name, f"not UTF-8 text ({error.reason})") from None
    document = CsvRecords(text, SOURCE, name)
    header = _check_header(document.header(), name)

    def keyed(cells: list[str]) -> tuple[str, T]:
        record = _record(header, cells)
        return _study(record).base, convert(record)

    studies: dict[str, T] = {}
    for line, (base, value) in document.converted(keyed, set_aside):
        if base in studies:
            raise ParseError(SOURCE, name, f"{base} is listed twice", line=line)
        studies[base] = value
    if not studies:
        raise ParseError(SOURCE, name, "the export lists no studies")
    return studies


def _check_header(fields: list[str] | None, name: str) -> list[str]:
    missing = [column for column in COLUMNS if column not in (fields or [])]
    if missing:
        raise ParseError(SOURCE, name, f"column {missing[0]!r} is missing", line=1)
    return fields or []


def _record(header: Sequence[str], cells: list[str]) -> dict[str, str]:
    """The record's cells by column; :class:`BadRecord` unless it has one per column."""
    if len(cells) != len(header):
        raise BadRecord(f"the record has {len(cells)} cells, the header {len(header)}")
    return dict(zip(header, cells, strict=True))


def _study(record: dict[str, str]) -> StudyVersion:
    study = StudyVersion.parse(record["accession"])
    if study is None:
        raise BadRecord(f"accession {record['accession']!r} is invalid")
    return study


def _version_and_release(record: dict[str, str]) -> tuple[StudyVersion, date | None]:
    return _study(record), _date(record["Release Date"], "Release Date")


def _study_row(record: dict[str, str]) -> Row:
    study = _study(record)
    parent = _named_accession(record["Parent study"])
    consents = CONSENT_SPLIT_RE.split(record["Study Consent"])
    counts = _content_counts(record["Study Content"])
    collections = _split(record["Collections"], ";")
    return {
        "study_accession": study.accession,
        "study_base": study.base,
        "name": clean(record["name"]),
        "description": clean(record["description"]),
        "parent_study_accession": parent[1] if parent else None,
        "parent_study_name": parent[0] if parent else None,
        "diseases": _split(record["Study Disease/Focus"], ";"),
        "study_designs": _split(record["Study Design"], ";"),
        "markersets": _split(record["Study Markerset"], ","),
        "molecular_data_types": _split(record["Study Molecular Data Type"], ","),
        "content_counts": json.dumps(counts, sort_keys=True) if counts else None,
        "reported_dataset_count": counts.get("phenotype datasets"),
        "reported_variable_count": counts.get("variables"),
        "reported_subject_count": counts.get("subjects"),
        "reported_sample_count": counts.get("samples"),
        "ancestry": _ancestry(record["Ancestry (computed)"]),
        "nih_institute": _value(record["NIH Institute"]),
        "consent_groups": [c for c in (clean(part) for part in consents) if c],
        "release_date": _date(record["Release Date"], "Release Date"),
        "embargo_release_date": _date(record["Embargo Release Date"], "Embargo Release Date"),
        "related_terms": _split(record["Related Terms"], ";"),
        "collections": collections,
        "collection_accessions": [
            match["accession"]
            for match in (NAMED_ACCESSION_RE.fullmatch(c) for c in collections)
            if match
        ],
    }


def _value(text: str | None) -> str | None:
    """Cleaned text; dbGaP's ``Not Applicable`` / ``Not Provided`` become ``None``."""
    value = clean(text)
    return None if value is None or value.lower() in MISSING else value


def _split(text: str | None, separator: str) -> list[str]:
    """Split a list cell; commas inside parentheses (``SNP Genotypes (NGS, WGS)``)
    do not separate."""
    value = _value(text)
    if value is None:
        return []
    pattern = COMMA_OUTSIDE_PARENS_RE if separator == "," else SEMICOLON_RE
    return [part for part in (_value(p) for p in pattern.split(value)) if part]


def _named_accession(text: str | None) -> tuple[str, str] | None:
    """``Name (phs000179.v7.p2)`` → (name, accession)."""
    value = _value(text)
    match = NAMED_ACCESSION_RE.fullmatch(value) if value else None
    return (match["name"], match["accession"]) if match else None


def _content_counts(text: str | None) -> dict[str, int]:
    """``5 phenotype datasets, 20 variables, SRA`` → {"phenotype datasets": 5, ...}."""
    counts: dict[str, int] = {}
    for part in (text or "").split(","):
        match = COUNT_RE.fullmatch(part.strip())
        if match:
            counts[match[2]] = int(match[1])
    return counts


def _ancestry(text: str | None) -> str | None:
    """``European (990), African (34)`` → ``{"African": 34, "European": 990}`` (JSON)."""
    groups = {match[1]: int(match[2]) for match in ANCESTRY_RE.finditer(text or "")}
    return json.dumps(groups, sort_keys=True) if groups else None


def _date(text: str, column: str) -> date | None:
    value = text.strip()
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise BadRecord(f"{column} {value!r} is not a YYYY-MM-DD date") from None


def acronyms(name: str | None) -> list[str]:
    """Short forms a study name gives in parentheses: ``… Cohort (MESA)`` → ``MESA``.

    Only single tokens of three or more characters with at least two capitals count,
    so ``(phase 2)``, ``(Mouse)`` or ``(CF)`` do not; accessions are skipped.
    """
    found = []
    for token in ACRONYM_RE.findall(name or ""):
        if sum(c.isupper() for c in token) >= 2 and not token.lower().startswith("phs"):
            found.append(token)
    return list(dict.fromkeys(found))

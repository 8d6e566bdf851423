"""Variable reports (``*.var_report.xml``): summary statistics per variable.

The root ``<data_table name dataset_id="pht….v…" study_name study_id participant_set
date_created>`` holds one ``<variable id="phv….v….p…" var_name calculated_type
reported_type units>`` per variable for all subjects, followed by one per consent
group whose id ends in ``.c<N>``. Each has ``<total>`` with an optional
``<subject_profile><sex><male/><female/></sex>``, and ``<stats>`` with one
``<stat n nulls mean sd median min max mean_count median_count min_count max_count>``
and the value counts: ``<enum [code] count>label</enum>`` (enumerated values) and
``<example count>value</example>`` (most frequent values of other variables).

A record is one ``<variable>`` element: one without an ``id`` or ``var_name``, with an
id that is not a ``phv`` accession, without ``<total><stats><stat>`` or with a count
or statistic that is not a number is set aside (quarantined) with its line, and the
report's other variables load; XML that does not parse fails the whole file.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from metabundle.errors import ParseError
from metabundle.sources.dbgap.accessions import StudyVersion
from metabundle.sources.dbgap.datasets import DatasetRef, file_name, parse_date, require
from metabundle.sources.dbgap.rows import Row, SetAside, Tables
from metabundle.sources.dbgap.text import collapse
from metabundle.sources.dbgap.xmlread import SOURCE, ElementLines, children, read_xml, text_of

VARIABLE_ID_RE = re.compile(r"(phv\d+\.v\d+)(?:\.p\d+)?(?:\.c(\d+))?")
TOTAL = "total"
FLOAT_STATS = ("mean", "median", "sd", "min", "max", "mean_count", "median_count")
INT_STATS = ("n", "nulls", "min_count", "max_count")
COUNT_KINDS = ("enum", "example")


def read_var_report(
    path: Path, name: str, study: StudyVersion, tables: Tables, set_aside: SetAside
) -> None:
    """Append the statistics and value counts of variable report ``path``, and the
    dataset and variables it describes (used where no data dictionary exists); a
    malformed variable goes to ``set_aside``."""
    document = read_xml(path, name)
    root = document.root
    if root.tag != "data_table":
        raise ParseError(SOURCE, name, f"root element is <{root.tag}>, not <data_table>")
    dataset = DatasetRef.from_root(root, name, study, "dataset_id")
    tables.report_datasets.append(
        dataset.row(
            file_name(name),
            description=text_of(root.find("description")),
            date_created=parse_date(root.get("date_created")),
            unique_keys=[],
            metadata_source="var_report",
            text_encoding=document.encoding,
        )
    )
    study_name = collapse(root.get("study_name"))
    if study_name:
        tables.study_names[study.accession] = study_name
    lines = ElementLines(path, document.encoding, "variable")
    for index, element in enumerate(children(root, "variable")):
        try:
            accession, consent = _split_variable_id(require(element, "id", name), name)
            variable = dataset.variable(accession, name, **_variable_fields(element, name))
            stat = _stat_row(element, variable, consent, name)
            counts = _count_rows(element, variable, consent, name)
        except ParseError as malformed:
            set_aside(malformed.reason, lines.line(index))
            continue
        if consent == TOTAL:
            tables.report_variables.append(variable)
        tables.stats.append(stat)
        tables.value_counts.extend(counts)


def _split_variable_id(value: str, name: str) -> tuple[str, str]:
    """``phv00124546.v4.p2.c1`` → (``phv00124546.v4``, ``c1``); no suffix → ``total``."""
    match = VARIABLE_ID_RE.fullmatch(value)
    if match is None:
        raise ParseError(SOURCE, name, f"variable id {value!r} is not a phv accession")
    return match[1], f"c{match[2]}" if match[2] else TOTAL


def _variable_fields(element: ET.Element, name: str) -> Row:
    """What a report says about a variable itself (for the variable table)."""
    return {
        "name": require(element, "var_name", name),
        "description": text_of(element.find("description")),
        "type": element.get("reported_type"),
        "units": element.get("units"),
        "logical_min": None,
        "logical_max": None,
        "comment": None,
        "collection_interval": None,
        "value_count": 0,
        "is_unique_key": False,
        "metadata_source": "var_report",
    }


def _stat_row(element: ET.Element, variable: Row, consent: str, name: str) -> Row:
    total = element.find("total")
    stat = None if total is None else total.find("stats/stat")
    if stat is None:
        raise ParseError(SOURCE, name, f"variable {element.get('id')} has no <total><stats><stat>")
    row = _stat_keys(variable, consent)
    row["calculated_type"] = element.get("calculated_type")
    row.update({key: _number(stat, key, int, name) for key in INT_STATS})
    row.update({key: _number(stat, key, float, name) for key in FLOAT_STATS})
    sex = total.find("subject_profile/sex") if total is not None else None
    row["male_count"] = _int_text(sex, "male", name)
    row["female_count"] = _int_text(sex, "female", name)
    return row


def _count_rows(element: ET.Element, variable: Row, consent: str, name: str) -> list[Row]:
    stats = element.find("total/stats")
    if stats is None:
        return []
    counted = [child for child in stats if child.tag in COUNT_KINDS]
    return [
        {
            **_stat_keys(variable, consent),
            "value_order": order,
            "kind": child.tag,
            "code": child.get("code"),
            "value": text_of(child),
            "count": _number(child, "count", int, name),
        }
        for order, child in enumerate(counted, start=1)
    ]


def _stat_keys(variable: Row, consent: str) -> Row:
    return {
        "variable_id": variable["variable_id"],
        "consent_group": consent,
        "consent_number": None if consent == TOTAL else int(consent[1:]),
        "study_accession": variable["study_accession"],
        "dataset_id": variable["dataset_id"],
        "variable_accession": variable["variable_accession"],
    }


def _number(
    element: ET.Element, attribute: str, kind: type[int] | type[float], name: str
) -> int | float | None:
    """A numeric attribute; blank is ``None``, anything else that is not a number is a
    :class:`ParseError` (the variable it belongs to is then set aside)."""
    value = (element.get(attribute) or "").strip()
    if not value:
        return None
    try:
        return kind(value)
    except ValueError:
        raise ParseError(
            SOURCE, name, f"{attribute}={value!r} of <{element.tag}> is not a number"
        ) from None


def _int_text(parent: ET.Element | None, tag: str, name: str) -> int | None:
    child = None if parent is None else parent.find(tag)
    value = text_of(child)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise ParseError(SOURCE, name, f"<{tag}>{value}</{tag}> is not a count") from None

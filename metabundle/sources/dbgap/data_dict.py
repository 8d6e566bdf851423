"""Data dictionaries (``*.data_dict.xml``): one dataset, its variables and coded values.

The root ``<data_table id="pht…" study_id="phs….v…" participant_set="…">`` holds an
optional ``<description>``, ``<unique_key>`` names and ``<variable id="phv…">``
elements with ``name``, ``description``, ``type``, ``unit``, ``logical_min``,
``logical_max``, ``comment``, ``coll_interval`` and ``<value code="…">label</value>``
children. Releases before 2010 name the file ``….data_dict_2008_10_31.xml``; the
content is the same.

A record is one ``<variable>`` element with its ``<value>`` children. A variable
without an ``id``, with an id that is not a ``phv`` accession, or without a ``<name>``
is set aside (quarantined) with its line, and the file's other variables load; XML that
does not parse, or a ``<data_table>`` without its own ids, fails the whole file.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from metabundle.errors import ParseError
from metabundle.sources.dbgap.accessions import StudyVersion
from metabundle.sources.dbgap.datasets import DatasetRef, file_name, parse_date, require
from metabundle.sources.dbgap.rows import Row, SetAside, Tables
from metabundle.sources.dbgap.xmlread import SOURCE, ElementLines, children, read_xml, text_of


def read_data_dict(
    path: Path, name: str, study: StudyVersion, tables: Tables, set_aside: SetAside
) -> None:
    """Append the dataset, variables and values of data dictionary ``path``; a malformed
    variable goes to ``set_aside``."""
    document = read_xml(path, name)
    root = document.root
    if root.tag != "data_table":
        raise ParseError(SOURCE, name, f"root element is <{root.tag}>, not <data_table>")
    dataset = DatasetRef.from_root(root, name, study, "id")
    unique_keys = [key for key in (text_of(k) for k in children(root, "unique_key")) if key]
    tables.datasets.append(
        dataset.row(
            file_name(name),
            description=text_of(root.find("description")),
            date_created=parse_date(root.get("date_created")),
            unique_keys=unique_keys,
            metadata_source="data_dict",
            text_encoding=document.encoding,
        )
    )
    lines = ElementLines(path, document.encoding, "variable")
    for index, element in enumerate(children(root, "variable")):
        fields, values = _fields(element)
        try:
            variable = _variable_row(element, name, dataset, fields, len(values))
        except ParseError as malformed:
            set_aside(malformed.reason, lines.line(index))
            continue
        variable["is_unique_key"] = variable["name"] in unique_keys
        tables.variables.append(variable)
        tables.values.extend(_value_rows(values, variable))


def _fields(element: ET.Element) -> tuple[dict[str, str | None], list[ET.Element]]:
    """A variable's child texts by tag (the first of each) and its ``<value>`` elements,
    in one pass over its children."""
    fields: dict[str, str | None] = {}
    values = []
    for child in element:
        if child.tag == "value":
            values.append(child)
        elif child.tag not in fields:
            fields[child.tag] = text_of(child)
    return fields, values


def _variable_row(
    element: ET.Element,
    name: str,
    dataset: DatasetRef,
    fields: dict[str, str | None],
    value_count: int,
) -> Row:
    phv = require(element, "id", name)
    variable_name = fields.get("name")
    if variable_name is None:
        raise ParseError(SOURCE, name, f"variable {phv} has no <name>")
    return dataset.variable(
        phv,
        name,
        name=variable_name,
        description=fields.get("description"),
        type=fields.get("type"),
        units=fields.get("unit"),
        logical_min=fields.get("logical_min"),
        logical_max=fields.get("logical_max"),
        comment=fields.get("comment"),
        collection_interval=fields.get("coll_interval"),
        value_count=value_count,
        metadata_source="data_dict",
    )


def _value_rows(values: list[ET.Element], variable: Row) -> list[Row]:
    return [
        {
            "variable_id": variable["variable_id"],
            "value_order": order,
            "study_accession": variable["study_accession"],
            "variable_accession": variable["variable_accession"],
            "code": value.get("code"),
            "label": text_of(value),
            "is_replacement": value.get("is_replacement", "").lower() == "yes",
        }
        for order, value in enumerate(values, start=1)
    ]

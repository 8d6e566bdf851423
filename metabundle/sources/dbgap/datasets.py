"""What data dictionaries and variable reports share: file names, dataset identity,
dates and the rows they produce.

The FTP tree names both kinds of file after the study version and dataset:
``<phs>.v<N>.<pht>.v<M>[.p<P>].<name>.<kind>.xml`` where ``kind`` is ``data_dict``
(``data_dict_<yyyy>_<mm>_<dd>`` before 2010) or ``var_report``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from metabundle.errors import ParseError
from metabundle.sources.dbgap.accessions import (
    StudyVersion,
    dataset_url,
    split_object_accession,
    variable_url,
)
from metabundle.sources.dbgap.rows import Row
from metabundle.sources.dbgap.xmlread import SOURCE

FILE_RE = re.compile(
    r"(?P<study>phs\d{6}\.v\d+)\.(?P<pht>pht\d{6}\.v\d+)(?:\.p\d+)?\.(?P<name>.+)"
    r"\.(?P<kind>data_dict(?:_\d{4}_\d\d_\d\d)?|var_report)\.xml"
)
DATE_FORMATS = ("%a %b %d %H:%M:%S %Y", "%Y/%m/%d", "%Y-%m-%d")


def file_name(name: str) -> str:
    """The last part of a file's key (``dbgap/studies/…/x.data_dict.xml`` → ``x.data_dict.xml``)."""
    return name.rsplit("/", 1)[-1]


def is_data_dict(name: str) -> bool:
    match = FILE_RE.fullmatch(name)
    return match is not None and match["kind"].startswith("data_dict")


def is_var_report(name: str) -> bool:
    match = FILE_RE.fullmatch(name)
    return match is not None and match["kind"] == "var_report"


def dataset_name(name: str) -> str:
    """The dataset name the FTP file name carries (``JHS_Subject``)."""
    match = FILE_RE.fullmatch(name)
    if match is None:
        raise ValueError(f"not a dbGaP data dictionary or variable report name: {name}")
    return match["name"]


def parse_date(value: str | None) -> date | None:
    """``Fri Oct 31 16:21:40 2008``, ``2024/07/03`` or ``2024-07-03`` → a date."""
    if not value:
        return None
    for pattern in DATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), pattern).date()
        except ValueError:
            continue
    return None


def require(element: ET.Element, attribute: str, name: str) -> str:
    """An attribute that must be present; a :class:`ParseError` naming the file if not."""
    value = element.get(attribute)
    if not value:
        raise ParseError(SOURCE, name, f"<{element.tag}> has no {attribute} attribute")
    return value


def object_accession(value: str, name: str) -> tuple[str, int]:
    """Split a ``pht``/``phv`` accession, or fail naming the file."""
    try:
        return split_object_accession(value)
    except ValueError as error:
        raise ParseError(SOURCE, name, str(error)) from None


@dataclass(frozen=True)
class DatasetRef:
    """Where a dataset sits: the study version folder it was published in, its
    accession and the study the table itself names (a parent study hosts the tables
    of its sub-studies, whose ``study_id`` differs)."""

    study_accession: str
    dataset_base: str
    dataset_version: int
    participant_set: str
    table_study_accession: str

    @classmethod
    def from_root(
        cls, root: ET.Element, name: str, study: StudyVersion, id_attribute: str
    ) -> DatasetRef:
        participant_set = root.get("participant_set") or str(study.participant_set)
        base, version = object_accession(require(root, id_attribute, name), name)
        table_study = f"{require(root, 'study_id', name)}.p{participant_set}"
        return cls(study.accession, base, version, participant_set, table_study)

    @property
    def accession(self) -> str:
        return f"{self.dataset_base}.v{self.dataset_version}.p{self.participant_set}"

    @property
    def dataset_id(self) -> str:
        return f"{self.study_accession}/{self.accession}"

    def row(self, source_file: str, **values: Any) -> Row:
        """A ``dbgap_dataset`` row for this dataset read from ``source_file``."""
        return {
            "dataset_id": self.dataset_id,
            "study_accession": self.study_accession,
            "dataset_accession": self.accession,
            "dataset_base": self.dataset_base,
            "dataset_version": self.dataset_version,
            "table_study_accession": self.table_study_accession,
            "name": dataset_name(source_file),
            "source_file": source_file,
            "canonical_url": dataset_url(self.table_study_accession, self.dataset_base),
            **values,
        }

    def variable(self, phv: str, file: str, **values: Any) -> Row:
        """A ``dbgap_variable`` row of this dataset for accession ``phv`` (``phv….v…``)
        read from ``file``."""
        base, version = object_accession(phv, file)
        accession = f"{base}.v{version}.p{self.participant_set}"
        return {
            "variable_id": f"{self.study_accession}/{accession}",
            "study_accession": self.study_accession,
            "dataset_id": self.dataset_id,
            "dataset_accession": self.accession,
            "variable_accession": accession,
            "variable_base": base,
            "variable_version": version,
            "canonical_url": variable_url(self.table_study_accession, base),
            **values,
        }

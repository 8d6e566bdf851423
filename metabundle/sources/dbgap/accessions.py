"""dbGaP accessions and the public URLs built from them.

A study version is ``phs000007.v31.p12``: the base ``phs000007``, the data version
``31`` and the participant set ``12``. Datasets (``pht``), variables (``phv``) and
documents (``phd``) carry a base and a version; their full form adds the study's
participant set (``phv00000479.v1.p12``). The URL forms are those of the dbGaP web
pages (``datadict_v2.xsl``, shipped next to every data dictionary, links variables
as ``variable.cgi?study_id=<phs…​.p…>&phv=<number>``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from metabundle.errors import ConfigError

GAP_CGI = "https://www.ncbi.nlm.nih.gov/projects/gap/cgi-bin"
FTP_STUDIES = "https://ftp.ncbi.nlm.nih.gov/dbgap/studies"
MIRROR_STUDIES = "dbgap/studies"

STUDY_RE = re.compile(r"(phs\d{6})\.v(\d+)\.p(\d+)")
SELECTION_RE = re.compile(r"(phs\d{6})(?:\.v(\d+)(?:\.p(\d+))?)?")
OBJECT_RE = re.compile(r"(ph[tvd]\d+)\.v?(\d+)(?:\.p\d+)?")


@dataclass(frozen=True, order=True)
class StudyVersion:
    """One study version, ordered by base then version."""

    base: str
    version: int
    participant_set: int

    @property
    def accession(self) -> str:
        return f"{self.base}.v{self.version}.p{self.participant_set}"

    @classmethod
    def parse(cls, text: str) -> StudyVersion | None:
        """``phs000007.v31.p12`` → a study version; anything else → ``None``."""
        match = STUDY_RE.fullmatch(text.strip().lower())
        if match is None:
            return None
        return cls(match[1], int(match[2]), int(match[3]))


@dataclass(frozen=True)
class StudySelector:
    """A ``dbgap_studies`` entry: a base, optionally narrowed to a version (and set)."""

    base: str
    version: int | None = None
    participant_set: int | None = None

    @classmethod
    def parse(cls, text: str) -> StudySelector:
        match = SELECTION_RE.fullmatch(text.strip().lower())
        if match is None:
            raise ConfigError(
                f"dbGaP study {text!r} in --dbgap-studies is not an accession like "
                "phs000007 or phs000007.v31.p12"
            )
        version = int(match[2]) if match[2] else None
        participant_set = int(match[3]) if match[3] else None
        return cls(match[1], version, participant_set)

    @property
    def text(self) -> str:
        version = "" if self.version is None else f".v{self.version}"
        participant_set = "" if self.participant_set is None else f".p{self.participant_set}"
        return f"{self.base}{version}{participant_set}"

    def admits(self, study: StudyVersion) -> bool:
        """Whether ``study`` is one of the versions this entry asks for."""
        return (
            study.base == self.base
            and self.version in (None, study.version)
            and self.participant_set in (None, study.participant_set)
        )


def split_object_accession(accession: str) -> tuple[str, int]:
    """``pht000009.v2`` or ``phv00000479.v1.p12`` → (``pht000009``, 2)."""
    match = OBJECT_RE.fullmatch(accession.strip())
    if match is None:
        raise ValueError(f"not a dbGaP dataset, variable or document accession: {accession!r}")
    return match[1], int(match[2])


def accession_number(base: str) -> int:
    """The number of an accession base: ``pht000009`` → 9."""
    return int(base[3:])


SYNTHETIC_STUDIES: frozenset[str] = frozenset({"phs001985", "phs001986"})
"""Accessions under which the NCPI dataset catalog publishes its synthetic
"Harmonization Test Study 1/2" in dbGaP's exact formats. A study under one of them
that the Advanced Search export does not list is synthetic: its rows are labelled so
and get no dbGaP URL (a real study listed under the accession would not be)."""


def study_url(study_accession: str) -> str:
    return f"{GAP_CGI}/study.cgi?study_id={study_accession}"


def dataset_url(study_accession: str, dataset_base: str) -> str:
    return f"{GAP_CGI}/dataset.cgi?study_id={study_accession}&pht={accession_number(dataset_base)}"


def variable_url(study_accession: str, variable_base: str) -> str:
    return (
        f"{GAP_CGI}/variable.cgi?study_id={study_accession}&phv={accession_number(variable_base)}"
    )


def document_url(study_accession: str, document_base: str) -> str:
    return (
        f"{GAP_CGI}/document.cgi?study_id={study_accession}&phd={accession_number(document_base)}"
    )

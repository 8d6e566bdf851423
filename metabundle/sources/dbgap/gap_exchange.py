"""GapExchange study XML (``GapExchange_<phs….v….p…>.xml``): study details and documents.

``<GaPExchange><Studies><Study accession parentStudy createDate modDate>`` holds
``<Configuration>`` (``StudyNameEntrez``, ``StudyTypes/StudyType``, ``Description``
as HTML in CDATA, ``Diseases/Disease@vocab_term``, ``Publications/…/Pubmed@pmid``,
``ConsentGroups/ConsentGroup@groupNum,shortName,longName``), ``<Documents>`` with one
``<Document phd type createDate modDate urlToXml urlToHtml>`` per study document
(``OrigName``, ``DisplayName``, ``Description``, ``displayStatus``) and
``<Annotations>`` linking document sections to variables (``phvRef@variableId``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from metabundle.errors import ParseError
from metabundle.sources.dbgap.accessions import StudyVersion, document_url
from metabundle.sources.dbgap.datasets import object_accession, parse_date
from metabundle.sources.dbgap.rows import Row
from metabundle.sources.dbgap.text import clean, html_to_text
from metabundle.sources.dbgap.xmlread import SOURCE, read_xml, text_of

NO_RESEARCH_USE = "0"


@dataclass
class GapExchange:
    """Study rows (one per file) and document rows gathered across GapExchange files."""

    studies: dict[str, Row] = field(default_factory=dict)
    documents: list[Row] = field(default_factory=list)


def read_gap_exchange(path: Path, name: str, study: StudyVersion, into: GapExchange) -> None:
    """Add the study details and documents of GapExchange file ``path``."""
    root = read_xml(path, name).root
    element = root.find("Studies/Study")
    if root.tag != "GaPExchange" or element is None:
        raise ParseError(SOURCE, name, "no <GaPExchange><Studies><Study> element")
    config = element.find("Configuration")
    if config is None:
        raise ParseError(SOURCE, name, "the study has no <Configuration>")
    into.studies[study.accession] = _study_row(element, config, study)
    annotated = _annotated_variables(element)
    for document in element.iterfind("Documents/Document"):
        into.documents.append(_document_row(document, study, annotated, name))


def _study_row(element: ET.Element, config: ET.Element, study: StudyVersion) -> Row:
    parent = StudyVersion.parse(element.get("parentStudy") or "")
    return {
        "study_accession": study.accession,
        "name": text_of(config.find("StudyNameEntrez"))
        or text_of(config.find("StudyNameReportPage")),
        "description": html_to_text(config.findtext("Description")),
        "parent_study_accession": parent.accession
        if parent is not None and parent.base != study.base
        else None,
        "study_designs": _texts(config.iterfind("StudyTypes/StudyType")),
        "diseases": _attributes(config.iterfind("Diseases/Disease"), "vocab_term"),
        "consent_groups": [
            f"{group.get('shortName')} --- {clean(group.get('longName'))}"
            for group in config.iterfind("ConsentGroups/ConsentGroup")
            if group.get("groupNum") != NO_RESEARCH_USE and group.get("shortName")
        ],
        "pubmed_ids": _attributes(config.iterfind("Publications/Publication/Pubmed"), "pmid"),
        "gap_create_date": parse_date(element.get("createDate")),
        "gap_mod_date": parse_date(element.get("modDate")),
    }


def _document_row(
    element: ET.Element, study: StudyVersion, annotated: dict[str, set[str]], name: str
) -> Row:
    phd = element.get("phd")
    if not phd:
        raise ParseError(SOURCE, name, "a <Document> has no phd attribute")
    base, version = object_accession(phd, name)
    display, description = (
        text_of(element.find("DisplayName")),
        text_of(element.find("Description")),
    )
    file_name = text_of(element.find("OrigName"))
    page = element.get("urlToHtml")
    return {
        "document_id": f"{study.accession}/{phd}",
        "study_accession": study.accession,
        "document_accession": phd,
        "document_base": base,
        "document_version": version,
        "title": display or description or file_name or phd,
        "description": description,
        "file_name": file_name,
        "document_type": element.get("type"),
        "create_date": parse_date(element.get("createDate")),
        "mod_date": parse_date(element.get("modDate")),
        "display_status": text_of(element.find("displayStatus")),
        "annotated_variable_count": len(annotated.get(phd, ())),
        "content_indexed": False,
        "xml_url": _https(element.get("urlToXml")),
        "canonical_url": _https(page) if page else document_url(study.accession, base),
    }


def _annotated_variables(element: ET.Element) -> dict[str, set[str]]:
    """Document accession → ids of the variables its sections are linked to."""
    linked: dict[str, set[str]] = {}
    for part in element.iterfind("Annotations/DocumentPart"):
        ids = {ref.get("variableId", "") for ref in part.iterfind("phvList/phvRef")}
        linked.setdefault(part.get("phd", ""), set()).update(ids - {""})
    return linked


def _texts(elements: Iterable[ET.Element]) -> list[str]:
    return [text for text in (text_of(e) for e in elements) if text]


def _attributes(elements: Iterable[ET.Element], attribute: str) -> list[str]:
    values = (clean(e.get(attribute)) for e in elements)
    return [value for value in values if value]


def _https(url: str | None) -> str | None:
    """NCBI serves these pages over https; the XML still says http."""
    if url and url.startswith("http://www.ncbi.nlm.nih.gov/"):
        return "https://" + url[len("http://") :]
    return url

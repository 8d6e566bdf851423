"""Imaging Data Commons citations, offline, in the formats DOI content negotiation
offers (and idc-index requests): APA text, BibTeX, CSL-JSON and Turtle.

The metadata (authors, year, title, version, publisher, DOI, license) are read from
the APA citation that ``idc-index-data`` ships for every data source; BibTeX is
written by ``bibtexparser`` and Turtle (schema.org terms) by ``rdflib``. Every answer
also carries the IDC acknowledgment: the IDC paper that idc-index adds to each
selection's citations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field as ParamField

from metabundle.search.budget import PAYLOAD_MAX_BYTES, payload_bytes
from metabundle.search.errors import invalid
from metabundle.search.params import Params, clamp
from metabundle.search.registry import tool
from metabundle.search.release import Release
from metabundle.search.services.idc import queries
from metabundle.search.services.idc.blocks import license_entry, page_block
from metabundle.search.services.idc.catalog import resolve_collection
from metabundle.search.services.idc.filters import (
    Filters,
    Selection,
    compile_filters,
    require_filters,
)
from metabundle.search.services.idc.models import (
    IdcAcknowledgment,
    IdcCitation,
    IdcCitations,
    IdcCslItem,
)
from metabundle.search.services.idc.source import GROUP, Offset, Text, require_idc

CitationFormat = Literal["apa", "bibtex", "csl-json", "turtle"]
PAGE_BYTES = PAYLOAD_MAX_BYTES - 8_000
"""The most one page of citations may take, leaving room for the answer's envelope."""
_YEAR = re.compile(r"\((\d{4})\)")
_VERSION = re.compile(r"\(Version ([^)]+)\)")
_PUBLISHER = re.compile(r"\[Data set\]\.\s*(.+?)\.\s*(?:https?://|$)")
_INITIALS = re.compile(r"^(?:[A-Z][a-z]?\.[\s-]*)+$")


@dataclass(frozen=True)
class Work:
    """The bibliographic metadata of one cited work."""

    doi: str
    title: str | None
    authors: list[dict[str, str]] = field(default_factory=list)
    year: int | None = None
    kind: str = "dataset"
    version: str | None = None
    publisher: str | None = None
    journal: str | None = None
    volume: str | None = None
    issue: str | None = None
    page: str | None = None
    license_url: str | None = None
    apa: str | None = None

    @property
    def url(self) -> str:
        return f"https://doi.org/{self.doi}"


IDC_PAPER = Work(
    doi="10.1148/rg.230180",
    title="National Cancer Institute Imaging Data Commons: Toward Transparency, "
    "Reproducibility, and Scalability in Imaging Artificial Intelligence",
    authors=[
        {"family": family, "given": given}
        for family, given in (
            ("Fedorov", "A."),
            ("Longabaugh", "W. J. R."),
            ("Pot", "D."),
            ("Clunie", "D. A."),
            ("Pieper", "S. D."),
            ("Gibbs", "D. L."),
            ("Bridge", "C."),
            ("Herrmann", "M. D."),
            ("Homeyer", "A."),
            ("Lewis", "R."),
            ("Aerts", "H. J. W."),
            ("Krishnaswamy", "D."),
            ("Thiriveedhi", "V. K."),
            ("Ciausu", "C."),
            ("Schacherer", "D. P."),
            ("Bontempi", "D."),
            ("Pihl", "T."),
            ("Wagner", "U."),
            ("Farahani", "K."),
            ("Kim", "E."),
            ("Kikinis", "R."),
        )
    ],
    year=2023,
    kind="article-journal",
    journal="RadioGraphics",
    volume="43",
    issue="12",
    page="e230180",
)
ACKNOWLEDGMENT_NOTE = (
    "Acknowledge IDC itself by citing this paper beside the data sources' citations, "
    "as idc-index does for every selection."
)


def _authors(text: str) -> list[dict[str, str]]:
    """APA author list -> CSL names: ``Hugo, G. D., Weiss, E., & Team`` ->
    family/given pairs, with organisations as literals."""
    tokens = [t.strip() for t in text.replace("&", ",").split(",") if t.strip()]
    names: list[dict[str, str]] = []
    position = 0
    while position < len(tokens):
        token = tokens[position]
        following = tokens[position + 1] if position + 1 < len(tokens) else ""
        if _INITIALS.match(following):
            names.append({"family": token, "given": following})
            position += 2
        else:
            names.append({"literal": token.rstrip(".")})
            position += 1
    return names


def work_from_apa(
    doi: str, text: str | None, title: str | None, license_url: str | None = None
) -> Work:
    """The metadata an idc-index-data APA citation states, from its plain ``text`` and
    ``title`` (``idc_data_source.citation_text`` and ``citation_title``)."""
    text = text or ""
    year = _YEAR.search(text)
    version = _VERSION.search(text)
    publisher = _PUBLISHER.search(text)
    return Work(
        doi=doi,
        title=title,
        authors=_authors(text[: year.start()]) if year else [],
        year=int(year.group(1)) if year else None,
        version=version.group(1) if version else None,
        publisher=publisher.group(1) if publisher else None,
        license_url=license_url,
        apa=text or None,
    )


def apa_text(work: Work) -> str:
    """The work as APA text: the shipped citation, built for the IDC paper, or (a DOI
    the package ships no citation for) its title and DOI address."""
    if work.apa:
        return work.apa
    if not work.authors:
        return f"{work.title}. {work.url}" if work.title else work.url
    names = [f"{a['family']}, {a['given']}" for a in work.authors]
    authors = ", ".join(names[:-1]) + f", & {names[-1]}" if len(names) > 1 else names[0]
    return (
        f"{authors} ({work.year}). {work.title}. {work.journal}, {work.volume}"
        f"({work.issue}), {work.page}. {work.url}"
    )


def csl_item(work: Work) -> IdcCslItem:
    """The work as a CSL-JSON item."""
    item: dict[str, Any] = {
        "id": work.doi,
        "type": work.kind,
        "title": work.title,
        "author": work.authors,
        "DOI": work.doi,
        "URL": work.url,
    }
    if work.year:
        item["issued"] = {"date-parts": [[work.year]]}
    optional = {
        "version": work.version,
        "publisher": work.publisher,
        "container-title": work.journal,
        "volume": work.volume,
        "issue": work.issue,
        "page": work.page,
    }
    item.update({key: value for key, value in optional.items() if value})
    return IdcCslItem.model_validate(item)


def _bibtex_name(author: dict[str, str]) -> str:
    if "literal" in author:
        return "{" + author["literal"] + "}"
    return f"{author['family']}, {author['given']}"


def bibtex(works: list[Work]) -> str:
    """The works as BibTeX (``@misc`` for data sets, ``@article`` for papers).
    ``bibtexparser`` is imported here, by the format that needs it: a serving process
    that never writes BibTeX does not pay for it at start-up."""
    import bibtexparser
    from bibtexparser.model import Entry, Field

    entries = []
    for work in works:
        fields = {
            "title": "{" + (work.title or work.doi) + "}",
            "author": " and ".join(_bibtex_name(a) for a in work.authors),
            "year": str(work.year) if work.year else None,
            "doi": work.doi,
            "url": work.url,
            "publisher": work.publisher,
            "version": work.version,
            "journal": work.journal,
            "volume": work.volume,
            "number": work.issue,
            "pages": work.page,
        }
        entry_type = "article" if work.kind == "article-journal" else "misc"
        key = re.sub(r"[^A-Za-z0-9]+", "_", work.doi)
        entries.append(Entry(entry_type, key, [Field(k, v) for k, v in fields.items() if v]))
    return bibtexparser.write_string(bibtexparser.Library(entries))


def turtle(works: list[Work]) -> str:
    """The works as RDF Turtle with schema.org terms, as DOI content negotiation serves
    (``rdflib``, 40 ms of imports, is imported by the format that needs it)."""
    import rdflib
    from rdflib.namespace import RDF, SDO

    graph = rdflib.Graph()
    graph.bind("schema", SDO)
    for work in works:
        node = rdflib.URIRef(work.url)
        kind = SDO.ScholarlyArticle if work.kind == "article-journal" else SDO.Dataset
        graph.add((node, RDF.type, kind))
        graph.add((node, SDO.identifier, rdflib.Literal(work.doi)))
        if work.title:
            graph.add((node, SDO.name, rdflib.Literal(work.title)))
        if work.year:
            graph.add((node, SDO.datePublished, rdflib.Literal(str(work.year))))
        for text, term in (
            (work.publisher, SDO.publisher),
            (work.version, SDO.version),
            (work.journal, SDO.isPartOf),
        ):
            if text:
                graph.add((node, term, rdflib.Literal(text)))
        if work.license_url:
            graph.add((node, SDO.license, rdflib.URIRef(work.license_url)))
        for position, author in enumerate(work.authors):
            person = rdflib.BNode(f"{re.sub(r'[^A-Za-z0-9]+', '_', work.doi)}_a{position}")
            name = author.get("literal") or f"{author['given']} {author['family']}"
            graph.add((node, SDO.author, person))
            graph.add((person, SDO.name, rdflib.Literal(name)))
    return graph.serialize(format="turtle")


def document(works: list[Work], citation_format: str) -> str | list[IdcCslItem]:
    """Every work in one document of the format (CSL-JSON: a list of items)."""
    if citation_format == "bibtex":
        return bibtex(works)
    if citation_format == "turtle":
        return turtle(works)
    if citation_format == "csl-json":
        return [csl_item(w) for w in works]
    return "\n\n".join(apa_text(w) for w in works)


class CitationsParams(Params):
    collection_id: Text | None = None
    filters: Filters | None = None
    format: CitationFormat = "apa"
    limit: Annotated[int, clamp(1, 300), ParamField(description="1..300.")] = 50
    offset: Offset = 0


def _citation_selection(release: Release, params: CitationsParams) -> Selection:
    if params.collection_id and params.filters:
        raise invalid("get_citations: pass collection_id or filters, not both.")
    filters = params.filters
    if params.collection_id:
        filters = {"collection_id": [resolve_collection(release, params.collection_id.strip())]}
    selection = compile_filters(release, filters)
    require_filters(selection, "get_citations", "pass collection_id or filters.")
    return selection


@tool(
    "get_citations",
    "Call whenever you report or hand over IDC data, to credit its sources.",
    CitationsParams,
    GROUP,
    response=IdcCitations,
    guide=(
        "Get the citations for the data sources of a collection or of a filtered "
        "selection of series (most-used source first, with DOI and license) in APA, "
        "BibTeX, CSL-JSON or Turtle, plus the IDC acknowledgment. Call it whenever you "
        "report or hand over IDC data, so the user can credit the data providers and IDC."
        " collection_id cites one collection (all its series, analysis results too); "
        "filters cite the sources of the series those build_cohort filters select; format"
        " apa is text."
    ),
)
def get_citations(release: Release, params: CitationsParams) -> IdcCitations:
    require_idc(release)
    selection = _citation_selection(release, params)
    used = queries.series_by_doi(release, selection)
    sources = queries.doi_sources(release, [doi for doi, _ in used if doi])
    wanted = used[params.offset : params.offset + params.limit]
    count = len(wanted)
    while True:  # a page whose document fits one answer, a next_offset for the rest
        answer = _citations_page(params, selection, len(used), wanted[:count], sources)
        if count <= 1 or payload_bytes(answer.model_dump()) <= PAGE_BYTES:
            return answer
        count //= 2


def _citations_page(
    params: CitationsParams,
    selection: Selection,
    total: int,
    page: list[tuple[str | None, int]],
    sources: dict[str, Any],
) -> IdcCitations:
    """The answer citing ``page`` (DOIs with their series), from ``params.offset``."""
    citations, works = [], []
    for doi, series in page:
        known = sources.get(doi) or {}
        work = work_from_apa(
            doi, known.get("citation_text"), known.get("citation_title"), known.get("license_url")
        )
        works.append(work)
        entry = IdcCitation(
            doi=doi,
            doi_url=work.url,
            title=work.title or known.get("title"),
            license=license_entry(known) if known else None,
            series=series,
        )
        if params.format == "apa":
            entry.citation = work.apa
        citations.append(entry)
    return IdcCitations(
        format=params.format,
        citations=citations,
        total=total,
        returned=len(citations),
        truncated=total > len(citations),
        page=page_block(total, params.limit, params.offset, len(citations)),
        document=document([*works, IDC_PAPER], params.format),
        idc_acknowledgment=IdcAcknowledgment(
            doi=IDC_PAPER.doi,
            doi_url=IDC_PAPER.url,
            citation=apa_text(IDC_PAPER),
            note=ACKNOWLEDGMENT_NOTE,
        ),
        **selection.echo(),
    )

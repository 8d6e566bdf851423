"""Which dbGaP studies a build reads, and downloading their files.

Discovery walks the FTP tree through its HTML directory listings, exactly as
``https://ftp.ncbi.nlm.nih.gov/dbgap/studies/`` serves them (a mirror's loopback
server and a local folder list the same way):

``studies/`` → ``<phs>/`` → ``<phs>.v<N>.p<P>/`` → ``GapExchange_<acc>.xml`` and
``pheno_variable_summaries/`` → ``*.data_dict.xml``, ``*.data_dict_<date>.xml`` and
``*.var_report.xml``.

Selection: ``settings.dbgap_studies`` (bases or versioned accessions); when empty,
profile ``complete`` (the default) reads every study directory upstream plus every
study of the Advanced Search export, and profile ``dev`` reads :data:`DEV_STUDIES`. Every version
directory of a selected study is read, so an older version on the FTP is kept next
to the export's current one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

from metabundle.digest import digest_of
from metabundle.errors import ConfigError, MetabundleError
from metabundle.meter import Meter
from metabundle.sources.base import FetchContext, RawSnapshot, Tokens
from metabundle.sources.dbgap import studies_csv
from metabundle.sources.dbgap.accessions import (
    FTP_STUDIES,
    MIRROR_STUDIES,
    StudySelector,
    StudyVersion,
)
from metabundle.sources.dbgap.datasets import is_data_dict, is_var_report

PHENO_FOLDER = "pheno_variable_summaries/"

DEV_STUDIES: tuple[str, ...] = (
    "phs000001",  # AREDS: a 2008 dated data dictionary; the export's current version is v3
    "phs000160",  # NIA-LOAD: GapExchange with documents and variable annotations, 2009 files
    "phs000286",  # Jackson Heart Study: a cohort (4,905 variables), the real var_report, v6 + v7
    "phs000424",  # GTEx: GapExchange with a questionnaire document; on the FTP v8, export v11
    "phs001252",  # ECLIPSE: GapExchange and 1,182 variables, acronym in the name
)
"""The ``dev`` profile's studies: small, real, and together covering every file kind
and the versions rule. Its releases list every other study as left out."""


@dataclass(frozen=True)
class Selection:
    """What a build reads: ``selectors`` (``None`` = everything) and how they were chosen."""

    mode: str
    selectors: tuple[StudySelector, ...] | None

    def admits(self, study: StudyVersion) -> bool:
        return self.selectors is None or any(s.admits(study) for s in self.selectors)

    def bases(self, available: Iterable[str]) -> list[str]:
        """The study bases to look at, from ``available`` when selecting everything."""
        if self.selectors is None:
            return sorted(set(available))
        return sorted({s.base for s in self.selectors})

    def describe(self) -> list[str] | str:
        if self.selectors is None:
            return "all"
        return [s.text for s in self.selectors]


def choose_selection(studies: tuple[str, ...], profile: str) -> Selection:
    """The build's studies: explicit ones (mode ``list``), else the profile's."""
    if studies:
        return Selection("list", tuple(StudySelector.parse(s) for s in studies))
    if profile == "dev":
        return Selection("dev", tuple(StudySelector.parse(s) for s in DEV_STUDIES))
    return Selection("all", None)


def csv_public_url() -> str:
    """Where the Advanced Search export is read from without a mirror: the address in
    ``METABUNDLE_DBGAP_STUDIES_CSV_URL``, else the NCPI catalog's published snapshot."""
    return studies_csv.DbgapSettings.load().dbgap_studies_csv_url


def fetch(ctx: FetchContext) -> RawSnapshot:
    """Download the export, then every file of every selected study version."""
    selection = choose_selection(ctx.settings.dbgap_studies, ctx.settings.profile)
    export = ctx.get(studies_csv.MIRROR_PATH, csv_public_url())
    listed = studies_csv.export_versions(export.path, export.key)
    current = {base: version for base, (version, _released) in listed.items()}
    on_ftp = {name.rstrip("/") for name in _listing(ctx, "") if name.startswith("phs")}
    bases = selection.bases(on_ftp | set(current))
    versions: list[StudyVersion] = []
    for base in bases:
        if base in on_ftp:
            versions += [v for v in _study_versions(ctx, base) if selection.admits(v)]
    _check_selection(selection, versions, current)
    meter = Meter(ctx.report, "dbGaP study versions", len(versions), "versions")
    for study in versions:
        _fetch_version(ctx, study)
        meter.advance(1)
    meter.close()
    newest = max((released for _version, released in listed.values() if released), default=None)
    return ctx.snapshot(
        upstream_version=f"advanced search export, newest release {newest}" if newest else None,
        details={
            "selection": selection.mode,
            "studies": selection.describe(),
            "study_bases": bases,
            "ftp_study_bases": sorted(on_ftp),
            "ftp_study_versions": [v.accession for v in versions],
            "export": export.key,
            "upstream_version_basis": "newest Release Date listed in the export",
        },
    )


def upstream_tokens(ctx: FetchContext) -> Tokens:
    """The study list, for the sensor: the FTP listing's digest, the export's sha256
    and, unless every study is selected, the version folders of the selected studies."""
    names = sorted(name.rstrip("/") for name in _listing(ctx, "") if name.startswith("phs"))
    tokens = {"ftp_studies": f"{len(names)}:{digest_of(names)}"}
    # without an export against the public upstream the FTP listing decides
    with contextlib.suppress(MetabundleError):
        export = ctx.get(studies_csv.MIRROR_PATH, csv_public_url())
        tokens["advanced_search_export"] = export.sha256
    selection = choose_selection(ctx.settings.dbgap_studies, ctx.settings.profile)
    if selection.selectors is not None:
        on_ftp = set(names)
        versions = [
            v.accession
            for base in selection.bases(names)
            if base in on_ftp
            for v in _study_versions(ctx, base)
        ]
        tokens["selected_study_versions"] = ",".join(sorted(versions))
    return tokens


def _listing(ctx: FetchContext, path: str) -> list[str]:
    """Entry names of ``studies/<path>`` (sub-directories end with ``/``)."""
    mirror = f"{MIRROR_STUDIES}/{path}".rstrip("/")
    public = f"{FTP_STUDIES}/{path}".rstrip("/")
    return ctx.fetcher.list_directory(ctx.upstream.directory(mirror, public))


def _study_versions(ctx: FetchContext, base: str) -> list[StudyVersion]:
    """The version directories of study ``base`` on the FTP."""
    found = (StudyVersion.parse(name.rstrip("/")) for name in _listing(ctx, base))
    return sorted(v for v in found if v is not None and v.base == base)


def _fetch_version(ctx: FetchContext, study: StudyVersion) -> None:
    folder = f"{study.base}/{study.accession}"
    entries = _listing(ctx, folder)
    gap_exchange = f"GapExchange_{study.accession}.xml"
    if gap_exchange in entries:
        _get(ctx, f"{folder}/{gap_exchange}")
    if PHENO_FOLDER in entries:
        pheno = f"{folder}/{PHENO_FOLDER.rstrip('/')}"
        for name in _listing(ctx, pheno):
            if is_data_dict(name) or is_var_report(name):
                _get(ctx, f"{pheno}/{name}")


def _get(ctx: FetchContext, path: str) -> None:
    ctx.get(f"{MIRROR_STUDIES}/{path}", f"{FTP_STUDIES}/{path}")


def _check_selection(
    selection: Selection, versions: list[StudyVersion], current: dict[str, StudyVersion]
) -> None:
    """Every requested study must exist on the FTP or in the export."""
    for selector in selection.selectors or ():
        known = [v for v in versions if selector.admits(v)]
        export_version = current.get(selector.base)
        if not known and not (export_version and selector.admits(export_version)):
            raise ConfigError(
                f"dbGaP study {selector.text} is neither in the Advanced Search "
                "export nor on the FTP"
            )

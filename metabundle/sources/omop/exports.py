"""Which vocabulary exports a build reads, and recording them in the snapshot.

In order of precedence:

1. ``--omop-vocab PATH...`` (``settings.omop_vocab``): Athena exports on disk, each a
   folder or the zip Athena hands out. Every table file is hashed into the snapshot.
2. A mirror upstream: every folder under ``BASE/omop/``, discovered from the directory
   listings and downloaded like any upstream file.
3. Public upstream: the GiBleed vocabulary subset that OHDSI publishes with its
   Eunomia R package, as comma-separated CDM files on GitHub (:data:`EUNOMIA_BASE`;
   read in the CDM CSV dialect, see :mod:`.athena`). It is the same data as the
   mirror's ``eunomia_gibleed``. There is no public URL for a full export (Athena
   requires a login and a licence check), so this is the best vocabulary a build can
   reach by itself; the release's coverage block says it holds public subsets only
   and names ``--omop-vocab`` as the way to the full vocabularies.

A snapshot's ``details["exports"]`` lists the exports in precedence order; when
exports disagree about a key, the first one wins (see :mod:`.ingest`).
"""

from __future__ import annotations

import csv
import zipfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from metabundle.digest import sha256_file
from metabundle.errors import ConfigError, ParseError
from metabundle.sources.base import FetchContext, RawFile
from metabundle.sources.omop.athena import SOURCE, TABLE_FILES

ATHENA_URL = "https://athena.ohdsi.org/vocabulary/list"
EUNOMIA_COMMIT = "295140996a80db2c69a7f5f5b72ff9f3943b6b65"
EUNOMIA_BASE = (
    f"https://raw.githubusercontent.com/OHDSI/Eunomia/{EUNOMIA_COMMIT}/EunomiaCdms/csv/cdm"
)
ZIP_SIGNATURE = b"PK\x03\x04"
"""The first bytes of a zip (its first local file header)."""
ATHENA_REMEDY = (
    "get an export from https://athena.ohdsi.org (log in, choose vocabularies, download "
    "the zip) and rebuild with --omop-vocab PATH (or METABUNDLE_OMOP_VOCAB)"
)
"""How a build gets the full vocabularies, for the coverage block and not-found answers."""


@dataclass(frozen=True)
class Export:
    """One vocabulary export: its table files by snapshot key, or a zip holding them.

    ``files`` maps a table file name (``CONCEPT.csv``) to the snapshot key of the file,
    or, when ``archive`` is the key of a zip, to the member name inside it. ``release``
    is the vocabulary release stamp the export carries (``v5.0 30-AUG-24``), if any.
    """

    name: str
    files: dict[str, str]
    archive: str | None = None
    release: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Export:
        return cls(**data)


def _modified(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")


def _record_local(ctx: FetchContext, key: str, path: Path) -> RawFile:
    return ctx.add_local(key, path, sha256_file(path), _modified(path))


def _table_files(names: Iterable[str], where: str) -> dict[str, str]:
    """The vocabulary table files among ``names`` (matched case-insensitively)."""
    by_upper: dict[str, str] = {}
    for name in names:
        base = name.rsplit("/", 1)[-1]
        if base.upper() in by_upper:
            raise ParseError(SOURCE, where, f"the export holds {base} twice")
        by_upper[base.upper()] = name
    found = {}
    for table_file in TABLE_FILES:
        name = by_upper.get(table_file.file_name.upper())
        if name is not None:
            found[table_file.file_name] = name
        elif table_file.required:
            raise ParseError(SOURCE, where, f"the export has no {table_file.file_name}")
    return found


SHARD_MARK = "*"
"""Athena marks the release stamp of a vocabulary shard (a subset cut from a release,
named "Vocabulary Shard derived from …") with a trailing asterisk."""


def _release_of(lines: Iterable[str]) -> str | None:
    """The vocabulary release stamp: the version of vocabulary ``None`` in VOCABULARY.csv;
    a shard's stamp reads ``subset of <release>`` instead of ending in ``*``."""
    rows = iter(lines)
    header = next(rows, "")
    if "\t" in header:
        reader = csv.reader(rows, delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(rows)
    for row in reader:
        if len(row) >= 4 and row[0] == "None":
            stamp = row[3].strip()
            if stamp.endswith(SHARD_MARK):
                return f"subset of {stamp.rstrip(SHARD_MARK).strip()}"
            return stamp or None
    return None


def _folder_export(ctx: FetchContext, index: int, folder: Path) -> Export:
    names = [p.name for p in sorted(folder.iterdir()) if p.is_file()]
    files = _table_files(names, str(folder))
    keys = {}
    for file_name, actual in files.items():
        key = f"omop_vocab/{index}-{folder.name}/{file_name}"
        _record_local(ctx, key, folder / actual)
        keys[file_name] = key
    with (folder / files["VOCABULARY.csv"]).open(encoding="utf-8", errors="replace") as handle:
        release = _release_of(handle)
    return Export(folder.name, keys, release=release)


def _zip_export(ctx: FetchContext, index: int, path: Path) -> Export:
    with zipfile.ZipFile(path) as archive:
        members = [info.filename for info in archive.infolist() if not info.is_dir()]
        files = _table_files(members, str(path))
        with archive.open(files["VOCABULARY.csv"]) as raw:
            release = _release_of(line.decode("utf-8", "replace") for line in raw)
    key = f"omop_vocab/{index}-{path.name}"
    _record_local(ctx, key, path)
    return Export(path.stem, files, archive=key, release=release)


def _starts_like_a_zip(path: Path) -> bool:
    with path.open("rb") as handle:
        return handle.read(len(ZIP_SIGNATURE)) == ZIP_SIGNATURE


def _truncated_zip(path: Path) -> ParseError:
    """A zip that begins like one but lacks the end-of-central-directory record that
    closes every complete zip: it was cut short (a partial download)."""
    size = path.stat().st_size
    return ParseError(
        SOURCE,
        str(path),
        f"the zip file is truncated: it ends at byte {size:,} without the "
        "end-of-central-directory record that closes a complete zip",
    )


def local_exports(ctx: FetchContext, paths: tuple[str, ...]) -> list[Export]:
    """Exports named with ``--omop-vocab``: folders or Athena zips, in the given order."""
    exports = []
    for index, value in enumerate(paths, start=1):
        path = Path(value).expanduser().resolve()
        if path.is_dir():
            exports.append(_folder_export(ctx, index, path))
        elif path.is_file() and zipfile.is_zipfile(path):
            exports.append(_zip_export(ctx, index, path))
        elif path.is_file() and _starts_like_a_zip(path):
            raise _truncated_zip(path)
        else:
            raise ConfigError(
                f"--omop-vocab {value} is neither a folder nor a zip file of an Athena export"
            )
    return exports


def _downloaded_export(
    ctx: FetchContext,
    name: str,
    mirror_paths: dict[str, str],
    public_urls: dict[str, str],
) -> Export:
    """Fetch each table file (file name → mirror path) and record the export."""
    fetched = {
        file_name: ctx.get(path, public_urls.get(file_name, ATHENA_URL))
        for file_name, path in mirror_paths.items()
    }
    with fetched["VOCABULARY.csv"].path.open(encoding="utf-8", errors="replace") as handle:
        release = _release_of(handle)
    keys = {file_name: raw.key for file_name, raw in fetched.items()}
    return Export(name, keys, release=release)


def mirror_exports(ctx: FetchContext) -> list[Export]:
    """Every export folder under ``omop/`` of the mirror, in name order."""
    base = ctx.upstream.directory("omop", ATHENA_URL)
    folders = sorted(e.rstrip("/") for e in ctx.fetcher.list_directory(base) if e.endswith("/"))
    if not folders:
        raise ParseError(SOURCE, base, "the mirror holds no vocabulary export folder")
    exports = []
    for folder in folders:
        listing_url = ctx.upstream.directory(f"omop/{folder}", ATHENA_URL)
        entries = [e for e in ctx.fetcher.list_directory(listing_url) if not e.endswith("/")]
        found = _table_files(entries, listing_url)
        paths = {name: f"omop/{folder}/{entry}" for name, entry in found.items()}
        exports.append(_downloaded_export(ctx, folder, paths, {}))
    return exports


def eunomia_export(ctx: FetchContext) -> Export:
    """The public GiBleed subset of OHDSI Eunomia (CDM CSV dialect) from GitHub."""
    names = [t.file_name for t in TABLE_FILES]
    paths = {name: f"github/OHDSI/Eunomia/EunomiaCdms/csv/cdm/{name}" for name in names}
    urls = {name: f"{EUNOMIA_BASE}/{name}" for name in names}
    return _downloaded_export(ctx, "eunomia_gibleed", paths, urls)


def choose_exports(ctx: FetchContext) -> list[Export]:
    """The exports this build reads, by the precedence in the module docstring."""
    if ctx.settings.omop_vocab:
        return local_exports(ctx, ctx.settings.omop_vocab)
    if ctx.upstream.is_mirror:
        return mirror_exports(ctx)
    return [eunomia_export(ctx)]

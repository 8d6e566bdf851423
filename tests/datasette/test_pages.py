"""Datasette pages of the release, in-process: descriptions, full-text search that
really filters, refused writes, canned queries and canonical links."""

from __future__ import annotations

import re
import sqlite3
from typing import Any
from urllib.parse import urlencode

import pytest
from datasette.app import Datasette
from markupsafe import escape

from metabundle.release.sqlite_file import fts_table_name
from metabundle.schemas import Target, all_tables
from metabundle.search.release import Release
from tests.datasette.conftest import DATABASE, get_json

pytestmark = pytest.mark.anyio

SQLITE_TABLES = [t for t in all_tables() if Target.SQLITE in t.targets]
FTS_TABLES = [t for t in SQLITE_TABLES if t.text_columns]
NONSENSE = "qzxqvjkwpq"
WORD = re.compile(r"[a-z]{5,}")


@pytest.mark.parametrize("table", SQLITE_TABLES, ids=lambda t: t.name)
async def test_every_table_page_shows_its_description(datasette: Datasette, table) -> None:
    response = await datasette.client.get(f"/{DATABASE}/{table.name}?_size=5")
    assert response.status_code == 200
    html = response.text
    assert str(escape(table.description)) in html
    for column in table.columns:
        assert f"<dt>{escape(column.name)}</dt><dd>{escape(column.description)}</dd>" in html
    assert "Data license:" in html and "Data source:" in html
    assert ('name="_search"' in html) == bool(table.text_columns)


def _search_word(db: sqlite3.Connection, table) -> tuple[str, dict[str, Any]]:
    """A word of some row's text that the full-text index matches in some rows but not
    all, and that row."""
    fts = fts_table_name(table.name)
    total = db.execute(f'SELECT count(*) FROM "{table.name}"').fetchone()[0]
    rows = db.execute(f'SELECT rowid AS _rowid, * FROM "{table.name}" LIMIT 500').fetchall()
    for row in rows:
        for column in table.text_columns:
            for word in WORD.findall(str(row[column] or "").lower()):
                matched = db.execute(
                    f'SELECT count(*) FROM "{fts}" WHERE "{fts}" MATCH ?', [f'"{word}"']
                ).fetchone()[0]
                if 0 < matched < total:
                    return word, dict(row)
    raise AssertionError(f"no searchable word in the first rows of {table.name}")


def _key_filter(table, row: dict[str, Any]) -> str:
    return urlencode({f"{k}__exact": row[k] for k in table.primary_key})


@pytest.mark.parametrize("table", FTS_TABLES, ids=lambda t: t.name)
async def test_search_filters_each_fts_table(
    datasette: Datasette, sqlite_db: sqlite3.Connection, table
) -> None:
    word, row = _search_word(sqlite_db, table)
    fts = fts_table_name(table.name)
    matching = {
        r[0]
        for r in sqlite_db.execute(
            f'SELECT rowid FROM "{fts}" WHERE "{fts}" MATCH ?', [f'"{word}"']
        ).fetchall()
    }
    other = sqlite_db.execute(
        f'SELECT * FROM "{table.name}" WHERE rowid NOT IN '
        f'(SELECT rowid FROM "{fts}" WHERE "{fts}" MATCH ?) LIMIT 1',
        [f'"{word}"'],
    ).fetchone()
    base = f"/{DATABASE}/{table.name}.json?_shape=objects&_search={word}"

    found = await get_json(datasette, base)
    assert found["filtered_table_rows_count"] == len(matching)
    total = (await get_json(datasette, f"/{DATABASE}/{table.name}.json?_size=0"))[
        "filtered_table_rows_count"
    ]
    assert 0 < len(matching) < total
    assert found["rows"], f"?_search={word} returns rows of {table.name}"

    the_row = await get_json(datasette, f"{base}&{_key_filter(table, row)}")
    assert len(the_row["rows"]) == 1, f"the row {word!r} came from is found"
    excluded = await get_json(datasette, f"{base}&{_key_filter(table, dict(other))}")
    assert excluded["rows"] == [], "a row without the word is excluded"
    nothing = await get_json(datasette, f"/{DATABASE}/{table.name}.json?_search={NONSENSE}")
    assert nothing["filtered_table_rows_count"] == 0, "?_search= is not silently ignored"


WRITES = [
    "DELETE FROM ukb_field",
    "UPDATE ukb_field SET title = 'x'",
    "INSERT INTO release_info VALUES ('k', 'v')",
    "DROP TABLE ukb_field",
    "CREATE TABLE evil (x)",
    "ATTACH DATABASE ':memory:' AS other",
    "PRAGMA user_version = 7",
    "VACUUM",
    # passes Datasette's SELECT check (it starts with WITH); the read-only file refuses it
    "WITH doomed AS (SELECT 1) DELETE FROM ukb_field",
    "WITH doomed AS (SELECT 1) UPDATE ukb_field SET title = 'x'",
]


@pytest.mark.parametrize("sql", WRITES)
async def test_write_sql_is_refused(datasette: Datasette, sqlite_db, sql: str) -> None:
    before = sqlite_db.execute("SELECT count(*), min(title) FROM ukb_field").fetchone()
    response = await datasette.client.get(f"/{DATABASE}.json?" + urlencode({"sql": sql}))
    assert response.status_code in (400, 403)
    assert response.json()["ok"] is False
    after = await get_json(
        datasette,
        f"/{DATABASE}.json?_shape=array&"
        + urlencode({"sql": "SELECT count(*) AS n, min(title) AS t FROM ukb_field"}),
    )
    assert (after[0]["n"], after[0]["t"]) == tuple(before)


async def test_the_database_is_served_immutable(datasette: Datasette) -> None:
    databases = await get_json(datasette, "/-/databases.json")
    (database,) = [d for d in databases if d["name"] == DATABASE]
    assert database["is_mutable"] is False
    settings = await get_json(datasette, "/-/settings.json")
    assert settings["sql_time_limit_ms"] == 3000
    assert settings["allow_download"] is False


async def _canned(datasette: Datasette, name: str, **params: str) -> list[dict[str, Any]]:
    path = f"/{DATABASE}/{name}.json?_shape=array&" + urlencode(params)
    return await get_json(datasette, path)


async def test_ukb_field_by_id_or_alias(datasette: Datasette, release: Release) -> None:
    for alias in ("21001", "p21001_i0", "P21001_I0", "21001-0.0", "f.21001.2.0", " f21001 "):
        rows = await _canned(datasette, "ukb_field_by_id_or_alias", id_or_alias=alias)
        assert {r["field_id"] for r in rows} == {21001}, alias
    title = release.query("SELECT title FROM ukb_field WHERE field_id = 21001")[0][0]
    assert rows[0]["title"] == title
    assert await _canned(datasette, "ukb_field_by_id_or_alias", id_or_alias="p99999999") == []


async def test_omop_concept_to_standard(datasette: Datasette, release: Release) -> None:
    concept_id, code, standard = release.query(
        "SELECT c.concept_id, c.concept_code, r.concept_id_2 FROM omop_concept c "
        "JOIN omop_concept_relationship r ON r.concept_id_1 = c.concept_id "
        "AND r.relationship_id = 'Maps to' AND r.invalid_reason IS NULL "
        "WHERE c.standard_concept IS NULL ORDER BY c.concept_id LIMIT 1"
    )[0]
    by_id = await _canned(datasette, "omop_concept_to_standard", concept=str(concept_id))
    assert standard in {r["standard_concept_id"] for r in by_id}
    by_code = await _canned(datasette, "omop_concept_to_standard", concept=code)
    assert concept_id in {r["concept_id"] for r in by_code}


async def test_dbgap_study_variables(datasette: Datasette, release: Release) -> None:
    versions = release.query(
        "SELECT s.study_base, v.study_accession, count(*) FROM dbgap_variable v "
        "JOIN dbgap_study s USING (study_accession) GROUP BY 1, 2 ORDER BY 1, 2"
    )
    by_base: dict[str, dict[str, int]] = {}
    for base, versioned, count in versions:
        by_base.setdefault(base, {})[versioned] = count
    fits = {base: counts for base, counts in by_base.items() if sum(counts.values()) <= 1000}
    base, counts = max(fits.items(), key=lambda item: (len(item[1]), item[0]))
    for versioned, count in counts.items():
        rows = await _canned(datasette, "dbgap_study_variables", study=versioned)
        assert len(rows) == count
        assert {r["study_accession"] for r in rows} == {versioned}
    every_version = await _canned(datasette, "dbgap_study_variables", study=base)
    assert len(every_version) == sum(counts.values())
    assert {r["study_accession"] for r in every_version} == set(counts)
    big, big_counts = max(by_base.items(), key=lambda item: sum(item[1].values()))
    if sum(big_counts.values()) > 1000:  # a larger answer says it was cut
        answer = await get_json(datasette, f"/{DATABASE}/dbgap_study_variables.json?study={big}")
        assert answer["truncated"] is True and len(answer["rows"]) == 1000


async def test_idc_cohort_counts(datasette: Datasette, release: Release) -> None:
    expected = {
        (collection, body_part): (patients, series)
        for collection, body_part, patients, series in release.query(
            "SELECT collection_id, BodyPartExamined, count(DISTINCT PatientID), count(*) "
            "FROM idc_series WHERE Modality = 'MR' GROUP BY 1, 2"
        )
    }
    rows = await _canned(
        datasette, "idc_cohort_counts", collection_id="", modality="mr", body_part=""
    )
    got = {(r["collection_id"], r["BodyPartExamined"]): (r["patients"], r["series"]) for r in rows}
    assert got == expected
    assert {r["Modality"] for r in rows} == {"MR"}


async def test_label_cells_link_to_the_canonical_page(
    datasette: Datasette, sqlite_db: sqlite3.Connection
) -> None:
    field_id, title, url = sqlite_db.execute(
        "SELECT field_id, title, canonical_url FROM ukb_field WHERE field_id = 21001"
    ).fetchone()
    html = (await datasette.client.get(f"/{DATABASE}/ukb_field?field_id=21001")).text
    link = f'class="canonical-link" href="{escape(url)}" rel="noopener noreferrer">'
    assert link + f"{escape(title)}</a>" in html
    assert f'class="canonical-url" href="{escape(url)}"' in html
    row = (await datasette.client.get(f"/{DATABASE}/ukb_field/{field_id}")).text
    assert f'At the source: <a href="{escape(url)}"' in row


async def test_the_index_page_offers_search_and_the_tables(
    datasette: Datasette, metadata: dict[str, Any]
) -> None:
    html = (await datasette.client.get("/")).text
    assert f"<title>{escape(metadata['title'])}" in html
    assert 'action="/-/search"' in html and 'name="q"' in html
    assert '<a href="/metabundle">metabundle</a>' in html
    assert '<a href="/metabundle/idc_series"' in html


async def test_an_unknown_source_page_is_a_404(datasette: Datasette) -> None:
    response = await datasette.client.get("/-/sources/nowhere")
    assert response.status_code == 404
    assert "no source named" in response.text

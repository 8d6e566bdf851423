"""UK Biobank source: the real Showcase mirror over loopback HTTP, fetched and parsed by
the production steps; malformed schema files served from a modified copy."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

from metabundle.config import BuildSettings
from metabundle.db import connect
from metabundle.errors import ParseError
from metabundle.schemas.ukb_aliases import ALIAS_FORMS, parse_alias
from metabundle.sources.base import SearchDocContext
from metabundle.sources.steps import StagedSource, fetch_source, parse_source
from metabundle.sources.ukb import SOURCE
from metabundle.sources.ukb.fields import MAX_COMBINATIONS
from metabundle.sources.ukb.files import LEGACY_KEY
from metabundle.sources.ukb.lookups import LOOKUPS
from metabundle.sources.ukb.markup import register_plain_text
from tests.support.servers import serve_directory

BMI_PATH = "UK Biobank Assessment Centre > Physical measures > Anthropometry > Body size measures"


def build(upstream: str, out: Path) -> StagedSource:
    """Fetch and parse the ukb source from ``upstream`` into ``out``."""
    settings = BuildSettings.load(out=out, sources=("ukb",), upstream=upstream)
    snapshot = fetch_source("ukb", settings, lambda _: None)
    return parse_source("ukb", snapshot, settings, lambda _: None)


@pytest.fixture(scope="session")
def staged(mirror_url: str, tmp_path_factory: pytest.TempPathFactory) -> StagedSource:
    return build(mirror_url, tmp_path_factory.mktemp("ukb"))


@pytest.fixture(scope="session")
def db(staged: StagedSource) -> Iterator[duckdb.DuckDBPyConnection]:
    """The staged tables as views of their names."""
    con = connect()
    for name, table in staged.tables.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{table.path}')")
    yield con
    con.close()


def rows(con: duckdb.DuckDBPyConnection, query: str) -> list[tuple]:
    return con.execute(query).fetchall()


def one(con: duckdb.DuckDBPyConnection, query: str) -> object:
    return rows(con, query)[0][0]


# -- fields ---------------------------------------------------------------------------


def test_every_field_is_loaded_with_its_columns(staged: StagedSource, db) -> None:
    assert set(staged.tables) == set(SOURCE.tables)
    assert staged.row_counts["ukb_field"] == 11_821
    field = dict(
        zip(
            [c[0] for c in db.execute("SELECT * FROM ukb_field LIMIT 0").description],
            rows(db, "SELECT * FROM ukb_field WHERE field_id = 21001")[0],
            strict=True,
        )
    )
    assert field["title"] == "Body mass index (BMI)"
    assert field["units"] == "Kg/m2"
    assert field["value_type_label"] == "Continuous"
    assert field["item_type_label"] == "Data"
    assert field["stability_label"] == "Complete"
    assert field["strata_label"] == "Derived"
    assert field["instanced_label"] == "Defined"
    assert (field["instance_min"], field["instance_max"], field["instance_count"]) == (0, 3, 4)
    assert field["arrayed_label"] == "No"
    assert field["sexed_label"] == "Both sexes"
    assert field["num_participants"] == 499_024
    assert str(field["debut"]) == "2012-01-11"
    assert field["canonical_url"] == "https://biobank.ndph.ox.ac.uk/ukb/field.cgi?id=21001"
    assert field["instancing_url"] == "https://biobank.ndph.ox.ac.uk/ukb/instance.cgi?id=2"
    icd10 = rows(
        db,
        "SELECT value_type_label, base_type_label, encoding_title, encoding_url, array_count "
        "FROM ukb_field WHERE field_id = 41270",
    )
    assert icd10 == [
        (
            "Categorical (multiple)",
            "Text",
            "ICD10",
            "https://biobank.ndph.ox.ac.uk/ukb/coding.cgi?id=19",
            259,
        )
    ]


@pytest.mark.parametrize(
    ("column", "lookup"),
    [(column, column) for column in LOOKUPS if column != "structure"]
    + [("base_type", "value_type")],
)
def test_no_code_is_left_undecoded_where_a_meaning_exists(db, column: str, lookup: str) -> None:
    decoded = rows(db, f"SELECT DISTINCT {column}, {column}_label FROM ukb_field ORDER BY 1")
    assert decoded
    for code, label in decoded:
        assert label == LOOKUPS[lookup].get(code), (column, code)
    assert all(label is not None for code, label in decoded if code != 0 or column != "base_type")


LABELS_QUERY = (
    "SELECT field_id, value_type_label, item_type_label, stability_label, strata_label, "
    "sexed_label FROM ukb_field"
)


def test_decoded_labels_agree_with_the_legacy_dictionary(staged: StagedSource, db) -> None:
    """The code meanings match the labels the retired dictionary printed for the same
    fields (fields change over time, so a few disagree)."""
    path = staged.snapshot.file(LEGACY_KEY).path
    with path.open(encoding="utf-8", newline="") as handle:
        legacy = {int(r["FieldID"]): r for r in csv.DictReader(handle)}
    ours = {r[0]: r[1:] for r in rows(db, LABELS_QUERY)}
    sexed = {"Unisex": "Both sexes", "Male": "Males only", "Female": "Females only"}
    pairs = {"value_type": [], "item_type": [], "stability": [], "strata": [], "sexed": []}
    for field_id, (value_type, item_type, stability, strata, sex) in ours.items():
        if field_id not in legacy:
            continue
        old = legacy[field_id]
        pairs["value_type"].append((value_type.replace("(", "").replace(")", ""), old["ValueType"]))
        pairs["item_type"].append((item_type, old["ItemType"]))
        pairs["stability"].append((stability, old["Stability"]))
        pairs["strata"].append((strata, old["Strata"]))
        pairs["sexed"].append((sex, sexed[old["Sexed"]]))
    assert len(pairs["value_type"]) > 7_000
    for name, compared in pairs.items():
        agreeing = sum(a == b for a, b in compared) / len(compared)
        assert agreeing > 0.95, (name, agreeing)


# -- categories -----------------------------------------------------------------------


def test_category_paths_resolve_where_the_data_allow(staged: StagedSource, db) -> None:
    details = staged.snapshot.details
    assert details["schema_3"] == "not available upstream"
    assert "Data_Dictionary_Showcase.csv" in details["category_titles"]
    share = one(db, "SELECT avg(CAST(category_path IS NOT NULL AS INT)) FROM ukb_field")
    assert 0.65 < share < 1
    spot = dict(
        rows(
            db,
            "SELECT field_id, category_path FROM ukb_field WHERE field_id IN "
            "(21001, 31, 41270, 40000)",
        )
    )
    assert spot == {
        21001: BMI_PATH,
        31: "Population characteristics > Baseline characteristics",
        41270: "Health-related outcomes > Hospital inpatient > Summary Diagnoses",
        40000: "Health-related outcomes > Death register",
    }
    assert rows(
        db,
        "SELECT title, title_source, parent_id, depth, canonical_url FROM ukb_category "
        "WHERE category_id = 100010",
    ) == [
        (
            "Body size measures",
            "legacy_leaf",
            100008,
            4,
            "https://biobank.ndph.ox.ac.uk/ukb/label.cgi?id=100010",
        )
    ]


def test_a_path_exists_exactly_when_every_title_up_the_tree_is_known(db) -> None:
    """Walk the stored tree independently: the path is the chain of titles, and it is
    missing only where some category on the chain has no title."""
    walked = rows(
        db,
        """
        WITH RECURSIVE up(start, node, titles, complete) AS (
            SELECT category_id, parent_id, [title], title IS NOT NULL
            FROM ukb_category WHERE in_tree
            UNION ALL
            SELECT up.start, c.parent_id, list_prepend(c.title, up.titles),
                   up.complete AND c.title IS NOT NULL
            FROM up JOIN ukb_category AS c ON c.category_id = up.node
        )
        SELECT up.start, CASE WHEN up.complete THEN array_to_string(up.titles, ' > ') END,
               c.path
        FROM up JOIN ukb_category AS c ON c.category_id = up.start
        WHERE up.node IS NULL
        """,
    )
    assert len(walked) == one(db, "SELECT count(*) FROM ukb_category WHERE in_tree")
    assert all(expected == stored for _, expected, stored in walked)
    mismatched = one(
        db,
        "SELECT count(*) FROM ukb_field AS f JOIN ukb_category AS c "
        "ON c.category_id = f.main_category "
        "WHERE f.category_path IS DISTINCT FROM c.path "
        "OR f.category_title IS DISTINCT FROM c.title",
    )
    assert mismatched == 0


# -- codings --------------------------------------------------------------------------


def test_codings_are_those_referenced_and_present_in_the_mirror(
    staged: StagedSource, db, upstream_dir: Path
) -> None:
    referenced = {r[0] for r in rows(db, "SELECT encoding_id FROM ukb_field")} - {0}
    mirrored = {int(p.stem) for p in (upstream_dir / "ukb/codown").iterdir()}
    details = staged.snapshot.details
    assert details["codings_referenced"] == len(referenced) == 683
    assert details["codings_fetched"] == sorted(referenced & mirrored)
    assert details["codings_missing"] == len(referenced - mirrored)
    loaded = rows(
        db,
        "SELECT encoding_id, num_members, value_count FROM ukb_encoding WHERE values_loaded",
    )
    assert sorted(e for e, _, _ in loaded) == details["codings_fetched"]
    assert all(members == count for _, members, count in loaded)
    assert staged.row_counts["ukb_encoding"] == 858


def test_icd10_keeps_its_tree(db) -> None:
    nodes = {
        r[0]: r[1:]
        for r in rows(
            db,
            "SELECT node_id, value, meaning, parent_id, selectable, depth "
            "FROM ukb_encoding_value WHERE encoding_id = 19",
        )
    }
    assert len(nodes) == 19_190
    leaf = next(n for n, v in nodes.items() if v[0] == "I219")
    chain = []
    node: int | None = leaf
    while node is not None:
        value, _, parent, selectable, depth = nodes[node]
        chain.append((value, selectable, depth))
        node = parent
    assert nodes[leaf][1] == "I21.9 Acute myocardial infarction, unspecified"
    assert chain == [
        ("I219", True, 4),
        ("I21", True, 3),
        ("Block I20-I25", False, 2),
        ("Chapter IX", False, 1),
    ]


def test_flat_codings_have_no_tree_and_repeated_tree_values_get_distinct_keys(db) -> None:
    flat = rows(
        db,
        "SELECT value, meaning, node_id, parent_id, selectable, depth FROM ukb_encoding_value "
        "WHERE encoding_id = 100605 ORDER BY value_order",
    )
    assert flat[0] == ("-7", "None of the above", None, None, None, 1)
    assert len(flat) == 6
    assert (
        one(
            db,
            "SELECT count(*) - count(DISTINCT (encoding_id, value_key)) FROM ukb_encoding_value",
        )
        == 0
    )
    repeated = rows(
        db,
        "SELECT value_key FROM ukb_encoding_value WHERE encoding_id = 6 AND value = '-1' "
        "ORDER BY value_order LIMIT 2",
    )
    assert all(key.startswith("-1@") for (key,) in repeated)


# -- aliases --------------------------------------------------------------------------


def test_aliases_cover_the_common_column_names(db) -> None:
    bmi = rows(db, "SELECT alias, alias_kind FROM ukb_field_alias WHERE field_id = 21001")
    aliases = {alias for alias, _ in bmi}
    assert {"21001", "f21001", "p21001"} <= aliases
    for instance in range(4):
        assert {f"21001-{instance}.0", f"f.21001.{instance}.0", f"p21001_i{instance}"} <= aliases
    assert len(aliases) == len(bmi) == 15
    assert dict(bmi)["p21001_i0"] == "rap"
    assert rows(
        db, "SELECT alias FROM ukb_field_alias WHERE field_id = 31 AND alias_kind = 'rap'"
    ) == [("p31",)]
    arrays = rows(
        db,
        "SELECT alias FROM ukb_field_alias WHERE field_id = 22009 AND alias_kind = 'rap' "
        "ORDER BY alias LIMIT 1",
    )
    assert arrays == [("p22009_a1",)]
    assert (
        one(
            db,
            "SELECT count(*) FROM ukb_field_alias WHERE field_id = 41270 "
            "AND alias_kind = 'ukbconv_csv'",
        )
        == 259
    )
    both = one(db, "SELECT count(*) FROM ukb_field_alias WHERE alias = 'p20002_i3_a33'")
    assert both == 1


def test_every_stored_column_name_reads_back_as_its_field_and_kind(db) -> None:
    """The build writes aliases and the tools read them with the same declared forms:
    each stored name reads as its field, through its own form (``p31`` of a singular
    field is both a RAP column and a RAP stem; parsing gives the first form)."""
    stored = rows(
        db,
        "SELECT alias, field_id, alias_kind FROM ukb_field_alias "
        "WHERE alias_kind <> 'legacy_title'",
    )
    assert len(stored) > 10_000
    misread = []
    for alias, field_id, kind in stored:
        readings = {
            (int(m["field"]), form.kind) for form in ALIAS_FORMS if (m := form.pattern.match(alias))
        }
        parsed = parse_alias(alias)
        if (field_id, kind) not in readings or parsed is None or parsed[0] != field_id:
            misread.append((alias, field_id, kind))
    assert misread == []
    assert parse_alias("p21001_i2_a0") == (21001, "rap", 2, 0)
    assert parse_alias("21001-1.0") == (21001, "ukbconv_csv", 1, 0)
    assert parse_alias("p21001") == (21001, "rap_stem", None, None)
    assert parse_alias("bmi") is None


def test_every_instance_and_array_combination_fits_the_bound(db) -> None:
    largest = one(db, "SELECT max(instance_count * array_count) FROM ukb_field")
    assert largest <= MAX_COMBINATIONS
    missing = one(
        db,
        "SELECT sum(instance_count * array_count) - (SELECT count(*) FROM ukb_field_alias "
        "WHERE alias_kind = 'ukbconv_csv') FROM ukb_field",
    )
    assert missing == 0


def test_legacy_titles_are_aliases_only_where_the_title_changed(db) -> None:
    legacy = rows(
        db,
        "SELECT f.title, a.alias FROM ukb_field_alias AS a JOIN ukb_field AS f USING (field_id) "
        "WHERE a.alias_kind = 'legacy_title'",
    )
    assert legacy
    assert all(title != alias for title, alias in legacy)
    assert "Daytime dozing / sleeping (narcolepsy)" in {alias for _, alias in legacy}


# -- search documents -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("published", "plain"),
    [
        (
            "Use <p>Month of Birth (~F52~) and ~c100261~.",
            "Use Month of Birth (field 52) and coding 100261.",
        ),
        ("See ~Xrepeat_2012~Repeat assessment~ here", "See repeat_2012Repeat assessment~ here"),
        ("<br> \u00a0 <br>", None),
        ("a\u2028\tb", "a b"),
        (None, None),
    ],
)
def test_markup_becomes_plain_text_at_build_time(published: str | None, plain: str | None) -> None:
    """Tags become spaces, links are worded by their letter in one left-to-right pass
    (as a regular expression substitution reads them), whitespace runs become one space."""
    with connect() as con:
        register_plain_text(con)
        assert con.execute("SELECT ukb_plain_text(?)", [published]).fetchall() == [(plain,)]


def test_the_tables_keep_the_published_notes_and_their_plain_text(db) -> None:
    assert one(db, "SELECT count(*) FROM ukb_field WHERE notes_text LIKE '%<%>%'") == 0
    assert (
        one(db, "SELECT count(*) FROM ukb_field WHERE regexp_matches(notes_text, '~[A-Z]\\d+~')")
        == 0
    )
    linked = rows(db, "SELECT notes, notes_text FROM ukb_field WHERE field_id = 33")[0]
    assert "~F52~" in linked[0] and "field 52" in linked[1]
    assert (
        one(
            db,
            "SELECT count(*) FROM ukb_field WHERE notes IS NOT NULL AND notes_text IS NULL "
            "AND trim(regexp_replace(notes, '<[^>]*>', '', 'g')) <> ''",
        )
        == 0
    )
    assert one(db, "SELECT count(*) FROM ukb_encoding WHERE description_text LIKE '%<%>%'") == 0


def test_search_documents(staged: StagedSource) -> None:
    con = connect()
    tables = {name: table.path for name, table in staged.tables.items()}
    docs = SOURCE.search_docs(SearchDocContext(tables, con))
    assert docs is not None
    docs.create("docs")
    kinds = dict(rows(con, "SELECT kind, count(*) FROM docs GROUP BY kind"))
    assert kinds == {"field": 11_821, "encoding": 857, "encoding_value": 82_767}
    assert one(con, "SELECT count(*) - count(DISTINCT doc_id) FROM docs") == 0
    bmi = rows(
        con,
        "SELECT title, body, embed_text, parent_id, identifiers, canonical_url FROM docs "
        "WHERE doc_id = 'ukb:field:21001'",
    )[0]
    assert bmi[0] == "Body mass index (BMI)"
    assert BMI_PATH in bmi[1] and "Kg/m2" in bmi[1]
    assert bmi[2].startswith("Body mass index (BMI). BMI value here is constructed")
    assert bmi[3] == "100010"
    assert {"21001", "p21001_i0", "21001-0.0", "f.21001.0.0", "f21001"} <= set(bmi[4])
    assert bmi[5] == "https://biobank.ndph.ox.ac.uk/ukb/field.cgi?id=21001"
    markup = one(con, "SELECT body FROM docs WHERE doc_id = 'ukb:field:41270'")
    assert "<p>" not in markup and "~F41280~" not in markup and "41280" in markup
    value = rows(
        con,
        "SELECT title, body, parent_id, identifiers FROM docs "
        "WHERE doc_id = 'ukb:encoding_value:19:I219'",
    )
    assert value == [
        (
            "I21.9 Acute myocardial infarction, unspecified",
            "I219 | ICD10",
            "19",
            ["19:i219", "i21.9", "i219"],
        )
    ]
    coding = rows(con, "SELECT title, identifiers FROM docs WHERE doc_id = 'ukb:encoding:19'")
    assert coding == [("ICD10", ["coding 19", "data-coding 19"])]
    assert one(con, "SELECT count(*) FROM docs WHERE title IS NULL OR entity_id IS NULL") == 0
    con.close()


# -- malformed input ------------------------------------------------------------------


def mirror_with(
    tmp: Path, upstream_dir: Path, changed: str, transform: Callable[[str], str]
) -> Path:
    """A copy of the ukb mirror made of links to the real files, except ``changed``
    (a path under ``ukb/``), which is written transformed."""
    for source in sorted((upstream_dir / "ukb").rglob("*")):
        if not source.is_file():
            continue
        relative = source.relative_to(upstream_dir)
        target = tmp / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if relative.as_posix() == changed:
            target.write_text(transform(source.read_text(encoding="utf-8")), encoding="utf-8")
        else:
            target.symlink_to(source)
    return tmp


def rename_header(old: str, new: str) -> Callable[[str], str]:
    def transform(text: str) -> str:
        header, rest = text.split("\n", 1)
        names = header.split("\t")
        assert old in names
        return "\t".join(new if n == old else n for n in names) + "\n" + rest

    return transform


def drop_column(name: str) -> Callable[[str], str]:
    def transform(text: str) -> str:
        lines = text.split("\n")
        index = lines[0].split("\t").index(name)
        kept = [
            "\t".join(c for i, c in enumerate(line.split("\t")) if i != index) for line in lines
        ]
        return "\n".join(kept)

    return transform


@pytest.mark.parametrize(
    ("changed", "transform", "column"),
    [
        ("ukb/scdown/1.txt", rename_header("value_type", "valuetype"), "value_type"),
        ("ukb/scdown/2.txt", drop_column("coded_as"), "coded_as"),
        ("ukb/scdown/13.txt", drop_column("parent_id"), "parent_id"),
        ("ukb/codown/19.tsv", rename_header("parent_id", "parent"), "parent_id"),
    ],
)
def test_a_missing_or_renamed_column_names_the_file_and_column(
    tmp_path: Path,
    upstream_dir: Path,
    changed: str,
    transform: Callable[[str], str],
    column: str,
) -> None:
    folder = mirror_with(tmp_path / "mirror", upstream_dir, changed, transform)
    with serve_directory(folder) as url, pytest.raises(ParseError) as failure:
        build(url, tmp_path / "out")
    message = str(failure.value)
    assert changed in message
    assert f"missing column {column!r}" in message


def change_line(number: int, change: Callable[[list[str]], list[str]]) -> Callable[[str], str]:
    """Line ``number`` (1 = the header) of a tab-separated text changed cell by cell."""

    def transform(text: str) -> str:
        lines = text.split("\n")
        lines[number - 1] = "\t".join(change(lines[number - 1].split("\t")))
        return "\n".join(lines)

    return transform


def test_a_bad_value_is_quarantined_with_its_file_line_and_column(
    staged: StagedSource, tmp_path: Path, upstream_dir: Path
) -> None:
    corrupt = change_line(4, lambda cells: ["x3", *cells[1:]])
    folder = mirror_with(tmp_path / "mirror", upstream_dir, "ukb/scdown/13.txt", corrupt)
    with serve_directory(folder) as url:
        damaged = build(url, tmp_path / "out")
    assert damaged.quarantine == {
        "ukb/scdown/13.txt": {
            "count": 1,
            "examples": [
                {"line": 4, "reason": "column 'parent_id' has 'x3', which is not an integer"}
            ],
        }
    }
    assert damaged.row_counts["ukb_field"] == staged.row_counts["ukb_field"]


def test_a_quarantined_tree_node_takes_its_subtree_with_it(
    staged: StagedSource, tmp_path: Path, upstream_dir: Path
) -> None:
    """ICD-10 (coding 19) line 3885 is node 38720 (H59) with three children: set aside
    as malformed, its children are cut off from the tree and quarantined too."""
    corrupt = change_line(3885, lambda cells: [*cells[:2], "x38720", *cells[3:]])
    folder = mirror_with(tmp_path / "mirror", upstream_dir, "ukb/codown/19.tsv", corrupt)
    with serve_directory(folder) as url:
        damaged = build(url, tmp_path / "out")
    entry = damaged.quarantine["ukb/codown/19.tsv"]
    assert entry["count"] == 4
    assert [e["line"] for e in entry["examples"]] == [3885, 3886, 3887, 3888]
    assert entry["examples"][0]["reason"] == (
        "column 'node_id' has 'x38720', which is not an integer"
    )
    assert entry["examples"][1]["reason"] == (
        "node 38730 is cut off from the tree: its parent 38720 was set aside or is missing"
    )
    values = "ukb_encoding_value"
    assert damaged.row_counts[values] == staged.row_counts[values] - 4


def test_a_stray_parent_in_a_whole_file_fails_naming_the_line(
    tmp_path: Path, upstream_dir: Path
) -> None:
    """Without a quarantined record to explain it, a parent that is not a node is the
    file's error."""
    corrupt = change_line(3886, lambda cells: [*cells[:3], "99999999", cells[4]])
    folder = mirror_with(tmp_path / "mirror", upstream_dir, "ukb/codown/19.tsv", corrupt)
    with serve_directory(folder) as url, pytest.raises(ParseError) as failure:
        build(url, tmp_path / "out")
    assert str(failure.value) == (
        "ukb: cannot parse ukb/codown/19.tsv, line 3886: parent_id 99999999 is not a node "
        "of this coding."
    )


def test_a_cut_short_last_line_fails_the_file(tmp_path: Path, upstream_dir: Path) -> None:
    def cut(text: str) -> str:
        return text.rstrip("\n").rsplit("\t", 3)[0]

    lines = (upstream_dir / "ukb/scdown/1.txt").read_text(encoding="utf-8").splitlines()
    folder = mirror_with(tmp_path / "mirror", upstream_dir, "ukb/scdown/1.txt", cut)
    with serve_directory(folder) as url, pytest.raises(ParseError) as failure:
        build(url, tmp_path / "out")
    assert failure.value.line == len(lines)
    assert "the file ends inside its last record, which is cut short" in str(failure.value)


def test_schema_3_supplies_the_titles_when_upstream_has_it(
    staged: StagedSource, db, tmp_path: Path, upstream_dir: Path
) -> None:
    """Serve a schema 3 laid out as the Showcase publishes it, holding the titles this
    build recovered, and check that they are then read from schema 3."""
    titled = rows(
        db,
        "SELECT category_id, title FROM ukb_category WHERE title IS NOT NULL ORDER BY 1",
    )
    lines = ["category_id\ttitle\tavailability\tgroup_type\tdescript\tnotes"]
    lines += [f"{category}\t{title}\t0\t1\t\t" for category, title in titled]
    folder = mirror_with(tmp_path / "mirror", upstream_dir, "ukb/scdown/13.txt", lambda t: t)
    (folder / "ukb/scdown/3.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with serve_directory(folder) as url:
        rebuilt = build(url, tmp_path / "out")
    assert rebuilt.snapshot.details["category_titles"] == "Showcase schema 3"
    assert rebuilt.snapshot.details["schema_3"] == "fetched"
    con = connect()
    path = rebuilt.tables["ukb_category"].path
    sources = dict(
        rows(con, f"SELECT title_source, count(*) FROM read_parquet('{path}') GROUP BY 1")
    )
    assert sources == {"schema_3": len(titled), None: 358 - len(titled)}
    con.close()

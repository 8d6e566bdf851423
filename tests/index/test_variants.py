"""Term variants mined from documents (abbreviations they spell out, spellings the
vocabulary holds both of) and the keyword search that scores them."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metabundle.index.fts import KeywordIndex
from metabundle.index.fts_build import build_fts_tables, write_keyword_arrays
from metabundle.index.variants import (
    ALTERNATIVE_WEIGHT,
    MAX_ALTERNATIVES,
    TermVariants,
    long_form,
    mine_abbreviations,
    spelling_pairs,
    variant_table,
    write_variants,
)

CORPUS = [
    ("Forced expiratory volume in 1-second (FEV1)", "Spirometry, best measure"),
    ("Forced expiratory volume in 1-second (FEV1), predicted", "Spirometry"),
    ("FEV1 pre-bronch", "FEV1_pre | COPDGene"),
    ("Pre/post-bronch FVC change", "FVC_change | COPDGene"),
    ("Body mass index (BMI)", "Anthropometry"),
    ("Weight and height", "Used for body mass index"),
    ("SECONDS HELD IF LESS THAN 10 (SECONDS)", "Balance test"),
    ("Sickle cell disease (SCD) screening (Sickle)", "Haematology"),
    ("Anaemia", "Low haemoglobin"),
    ("Iron deficiency anemia", "Low hemoglobin"),
    ("Cardiac output", "Echocardiography"),
]


def docs(rows: list[tuple[str, str]]) -> pa.Table:
    return pa.table(
        {
            "docno": pa.array(range(len(rows)), pa.int32()),
            "title": pa.array([r[0] for r in rows], pa.string()),
            "body": pa.array([r[1] for r in rows], pa.string()),
        }
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[pa.Table, KeywordIndex, KeywordIndex]:
    """The variant table of CORPUS, and its keyword index with and without it."""
    folder = tmp_path_factory.mktemp("variants")
    pq.write_table(docs(CORPUS), folder / "search_doc.parquet")
    tables = build_fts_tables(docs(CORPUS))
    with duckdb.connect() as con:
        abbreviations = mine_abbreviations(con, folder / "search_doc.parquet")
    table = variant_table(abbreviations, spelling_pairs(tables["fts_term"]["term"].to_pylist()))
    write_keyword_arrays(tables, folder / "plain")
    write_keyword_arrays(tables, folder / "with")
    write_variants(table, folder / "with")
    return table, KeywordIndex.open(folder / "with"), KeywordIndex.open(folder / "plain")


def rows_of(table: pa.Table, kind: str) -> list[tuple[str, str, int]]:
    return [
        (r["form"], r["variant"], r["documents"]) for r in table.to_pylist() if r["kind"] == kind
    ]


def test_the_long_form_is_the_words_that_spell_the_short_form() -> None:
    assert long_form("BMI", "Weight and body mass index") == "body mass index"
    assert long_form("FEV1", "Forced expiratory volume in 1-second") == (
        "Forced expiratory volume in 1-second"
    )
    assert long_form("BMI", "Weight and height") is None


def test_abbreviations_are_the_ones_documents_spell_out(built) -> None:
    abbreviations = rows_of(built[0], "abbreviation")
    assert ("FEV1", "Forced expiratory volume in 1-second", 2) in abbreviations
    assert ("BMI", "Body mass index", 1) in abbreviations
    assert ("SCD", "Sickle cell disease", 1) in abbreviations
    shorts = {short for short, _, _ in abbreviations}
    # upper-case text in parentheses is a word, and a single capital is not a short form
    assert "SECONDS" not in shorts and "Sickle" not in shorts


def test_spellings_pair_terms_the_vocabulary_holds_in_both_forms(built) -> None:
    spellings = {(form, variant) for form, variant, _ in rows_of(built[0], "spelling")}
    assert ("anaemia", "anemia") in spellings
    assert ("haemoglobin", "hemoglobin") in spellings
    assert all(form != variant for form, variant in spellings)
    assert spelling_pairs(["tumour", "tumor", "colour"]) == [("tumour", "tumor")]


def test_a_query_naming_a_long_form_gets_its_short_form(built) -> None:
    variants = TermVariants(tuple(r.values()) for r in built[0].to_pylist())
    alternatives = variants.alternatives("forced expiratory volume in one second")
    assert alternatives == [["fev1"]]  # "one" names the "1" of "1-second"
    assert variants.alternatives("body mass index and waist") == [["waist", "bmi"]]
    assert variants.alternatives("body and waist") == []


def test_a_short_form_expands_only_when_written_with_its_capitals(built) -> None:
    variants = TermVariants(tuple(r.values()) for r in built[0].to_pylist())
    assert variants.alternatives("BMI at baseline") == [["baselin", "bodi", "mass", "index"]]
    assert variants.alternatives("bmi at baseline") == []


def test_text_alternatives_write_the_other_form_where_the_query_wrote_one(built) -> None:
    variants = TermVariants(tuple(r.values()) for r in built[0].to_pylist())
    # the long form's words (and the stop words between them) give way to the short form
    assert variants.alternative_texts("forced expiratory volume in one second") == ["FEV1"]
    assert variants.alternative_texts("body mass index and waist") == ["BMI and waist"]
    assert variants.alternative_texts("waist, body mass index") == ["waist BMI"]
    # a short form written with its capitals gives way to its long form, as documents write it
    assert variants.alternative_texts("BMI at baseline") == ["Body mass index at baseline"]
    assert variants.alternative_texts("bmi at baseline") == []
    assert variants.alternative_texts("FEV1 second") == ["Forced expiratory volume in 1-second"]
    # a query holding both forms, or neither, has nothing to rewrite; spellings are
    # left to the keyword index
    assert variants.alternative_texts("body mass index (BMI)") == []
    assert variants.alternative_texts("body and waist") == []
    assert variants.alternative_texts("anaemia") == []


def test_text_alternatives_are_bounded_and_distinct(built) -> None:
    variants = TermVariants(tuple(r.values()) for r in built[0].to_pylist())
    texts = variants.alternative_texts("BMI FEV1 SCD body mass index forced expiratory volume 1")
    assert 0 < len(texts) <= MAX_ALTERNATIVES
    assert len(set(texts)) == len(texts)


def test_alternatives_are_bounded_and_distinct(built) -> None:
    variants = TermVariants(tuple(r.values()) for r in built[0].to_pylist())
    alternatives = variants.alternatives("BMI FEV1 anaemia haemoglobin SCD body mass index")
    assert 0 < len(alternatives) <= MAX_ALTERNATIVES
    assert len({tuple(a) for a in alternatives}) == len(alternatives)


def test_keyword_search_finds_documents_through_variants(built) -> None:
    _, with_variants, plain = built
    fev1_pre = 2
    query = "forced expiratory volume in one second"
    assert fev1_pre not in plain.search(query, 10)[0]
    assert fev1_pre not in with_variants.search(query, 10)[0]  # only when asked
    docs, scores = with_variants.search(query, 10, variants=True)
    assert fev1_pre in docs
    # the query's own words outweigh an alternative's: the documents titled with the
    # long form come first, and no score passes the weighted ideal of the query
    assert set(docs[:2]) == {0, 1}
    found = dict(zip(docs.tolist(), scores.tolist(), strict=True))
    assert found[fev1_pre] <= ALTERNATIVE_WEIGHT * with_variants.ideal_score(query) + 1e-4
    spelled = with_variants.search("anemia", 10, variants=True)[0]
    assert {8, 9} <= set(spelled.tolist())
    assert 8 not in plain.search("anemia", 10)[0]


def test_a_release_index_without_variants_searches_as_before(built, tmp_path: Path) -> None:
    _, _, plain = built
    assert plain.variants is None
    docs, _ = plain.search("forced expiratory volume in one second", 10, variants=True)
    assert 2 not in docs


def test_the_variant_table_is_deterministic(built, tmp_path: Path) -> None:
    table = built[0]
    assert table.to_pylist() == sorted(
        table.to_pylist(), key=lambda r: (r["kind"], r["form"], r["variant"])
    )
    write_variants(table, tmp_path)
    first = (tmp_path / "variants.json").read_bytes()
    write_variants(table, tmp_path)
    assert (tmp_path / "variants.json").read_bytes() == first

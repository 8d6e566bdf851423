"""The tokenizer: codes kept, accents folded, stems, stop words, SQL-reproducible split."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metabundle.index.tokenizer import (
    SPLIT_PATTERN,
    STOP_WORDS,
    TRIM_CHARS,
    fold,
    split_forms,
    surface_forms,
    tokenize,
    tokenize_many,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("K92.2", ["k92.2", "k92", "2"]),
        ("phs000179", ["phs000179"]),
        ("phs000179.v3.p1", ["phs000179.v3.p1", "phs000179", "v3", "p1"]),
        ("21001", ["21001"]),
        ("f.21001.0.0", ["f.21001.0.0", "21001", "0"]),
        ("p21001_i0", ["p21001_i0", "p21001", "i0"]),
        ("8462-4", ["8462-4", "8462", "4"]),
        ("Smoking_100CigsLifetime", ["smoking_100cigslifetime", "smoke", "100cigslifetime"]),
        ("COVID-19", ["covid-19", "covid", "19"]),
    ],
)
def test_codes_and_numbers_are_kept_whole_and_in_parts(text, expected):
    assert tokenize(text) == expected


def test_a_dataset_accession_matches_its_versioned_form():
    assert "phs000179" in tokenize("see phs000179.v3.p1 for details")


def test_trailing_punctuation_does_not_stick_to_codes():
    assert tokenize("Gastrointestinal haemorrhage, K92.2.") == tokenize(
        "gastrointestinal haemorrhage K92.2"
    )
    assert "k92.2" in tokenize("(K92.2)")
    assert tokenize("--- ... __") == []


def test_accents_are_folded():
    assert tokenize("Sjögren syndrome") == tokenize("sjogren syndrome")
    assert tokenize("Crème brûlée, naïve café") == tokenize("creme brulee, naive cafe")
    assert fold("Sjögren") == "sjogren"
    assert fold("ﬁbrosis") == "fibrosis"  # NFKD compatibility decomposition


def test_plain_words_are_stemmed():
    assert tokenize("smoking") == tokenize("smoke") == tokenize("smokes") == ["smoke"]
    assert tokenize("Studies") == tokenize("study")
    assert tokenize("Hospitalization") == tokenize("hospitalizations")


def test_tokens_with_digits_are_not_stemmed():
    assert tokenize("p21001s") == ["p21001s"]
    assert tokenize("covid19ing") == ["covid19ing"]


def test_stop_words_are_dropped_and_documented():
    assert tokenize("The status of the patient is not known") == tokenize("status patient known")
    assert len(STOP_WORDS) == 33  # Lucene's EnglishAnalyzer default set
    assert {"the", "of", "and", "with"} <= STOP_WORDS
    for word in STOP_WORDS:
        assert tokenize(word) == []


def test_single_letters_are_dropped_but_single_digits_kept():
    assert tokenize("vitamin D type 2 diabetes") == ["vitamin", "type", "2", "diabet"]


def test_empty_and_missing_text():
    assert tokenize(None) == []
    assert tokenize("") == []
    assert tokenize_many([None, "", "   "]) == [[], [], []]


def test_tokenize_many_equals_tokenize():
    texts = [
        "Smoking status",
        None,
        "Sjögren's syndrome, K92.2.",
        "phs000179.v3.p1 and phs000007.v31.p12",
        "Ever smoked 100 cigarettes (Smoking_100CigsLifetime)?",
        "ﬁbrosis x² Ｆull-width",
        "smoking smoking smoking",
    ]
    assert tokenize_many(texts) == [tokenize(t) for t in texts]


def test_surface_forms_pair_each_term_with_its_folded_word():
    assert surface_forms("Smoking the K92.2.") == [
        ("smoking", "smoke"),
        ("k92.2", "k92.2"),
        ("k92.2", "k92"),
        ("k92.2", "2"),
    ]
    assert [term for _, term in surface_forms("Sjögren, COVID-19")] == tokenize("Sjögren, COVID-19")


def _duckdb_forms(con: duckdb.DuckDBPyConnection, text: str) -> list[str]:
    rows = con.execute(
        f"""
        SELECT trim(piece, '{TRIM_CHARS}') AS form
        FROM (SELECT unnest(regexp_split_to_array(lower(strip_accents(?)), '{SPLIT_PATTERN}'))
              AS piece)
        WHERE trim(piece, '{TRIM_CHARS}') <> ''
        """,
        [text],
    ).fetchall()
    return [row[0] for row in rows]


@pytest.fixture(scope="module")
def con():
    connection = duckdb.connect()
    yield connection
    connection.close()


@pytest.mark.parametrize(
    "text",
    [
        "Gastrointestinal haemorrhage, K92.2.",
        "Sjögren's syndrome; naïve café (Crème)",
        "phs000179.v3.p1/pht000001.v1",
        "--x-- ..y.. __z__ COVID-19: İstanbul Øresund Straße",
        "Tab\tseparated\nlines\r\nand   spaces",
        "f.21001.0.0 p21001_i0 8462-4 Smoking_100CigsLifetime",
    ],
)
def test_python_split_agrees_with_the_sql_split(con, text):
    assert split_forms(fold(text)) == _duckdb_forms(con, text)


# Letters that NFKD and DuckDB's (canonical) strip_accents treat alike: ASCII, accented
# Latin letters, a few non-decomposing letters and separators.
_ALPHABET = st.sampled_from(
    list("abcXYZ019._-  ,;:/()'\"\t\n") + list("éÉöÖçñåÅøßłİıœæ") + ["e\u0301"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_ALPHABET, max_size=30).map("".join))
def test_python_split_agrees_with_sql_on_random_text(con, text):
    assert split_forms(fold(text)) == _duckdb_forms(con, text)

"""The words of search documents' titles, as the title-similarity fallback of the
ranking (:func:`metabundle.search.ranking.stages.title_candidates`) splits them: the
build writes each source's distinct title words with the documents that hold them
(``search_title_word``), so a query compares its words with each distinct word once
and reads only the titles that hold a close one, whatever the size of the corpus."""

from __future__ import annotations

from pathlib import Path

MIN_WORD_LENGTH = 2
WORD_SEPARATOR = "[^a-z0-9]+"
"""What separates the words of a lower-cased title or query (a regular expression)."""


def split_title(lowered: str) -> str:
    """SQL splitting the lower-cased title expression ``lowered`` into its words (empty
    strings and single characters included; callers keep :data:`MIN_WORD_LENGTH`)."""
    return f"regexp_split_to_array({lowered}, '{WORD_SEPARATOR}')"


def title_words_sql(search_doc: Path) -> str:
    """``search_title_word`` rows of the ``search_doc`` Parquet file at ``search_doc``."""
    return f"""
SELECT source, word, list(docno ORDER BY docno) AS docnos
FROM (
    SELECT DISTINCT source, docno, unnest({split_title("lower(title)")}) AS word
    FROM read_parquet('{search_doc}')
)
WHERE length(word) >= {MIN_WORD_LENGTH}
GROUP BY source, word
"""

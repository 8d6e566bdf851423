"""Showcase markup reduced to plain text, once, at build time.

Showcase notes and encoding descriptions carry HTML tags (``<p>``, ``<br>``) and links
written ``~F123~`` (a field), ``~C123~`` (a coding), ``~L123~`` (a category) and
``~R123~`` (a resource). :data:`PLAIN_TEXT_MACRO` defines ``ukb_plain_text(text)``:
tags become spaces, a link becomes ``field 123`` (``coding``, ``category``,
``resource``; another letter leaves the text between the tildes), whitespace runs
(Unicode spaces included) become one space, and empty text becomes NULL. The parse
step stores the result beside the published text (``ukb_field.notes_text``,
``ukb_encoding.description_text``); search documents and the tools read it from there.
"""

from __future__ import annotations

import duckdb

MARKUP_WORDS = {"F": "field", "C": "coding", "L": "category", "R": "resource"}


def _links(sql: str) -> str:
    """Links of ``sql`` replaced in one left-to-right pass (as a regex substitution
    reads them: ``~Xname~Text~`` is one link and a stray tilde), each first marked
    ``\x01<letter>\x02<text>`` and then worded by its letter."""
    sql = f"regexp_replace({sql}, '~([A-Za-z])([^~]*)~', '\x01\\1\x02\\2', 'g')"
    for letter, word in MARKUP_WORDS.items():
        sql = f"regexp_replace({sql}, '\x01[{letter}{letter.lower()}]\x02', '{word} ', 'g')"
    return f"regexp_replace({sql}, '\x01[A-Za-z]\x02', '', 'g')"


PLAIN_TEXT_MACRO = (
    "CREATE OR REPLACE TEMP MACRO ukb_plain_text(text) AS nullif(trim(regexp_replace("
    + _links("regexp_replace(text, '<[^>]*>', ' ', 'g')")
    + r", '[\s\p{Z}\x{0b}\x{85}\x{1c}-\x{1f}]+', ' ', 'g')), '')"
)


def register_plain_text(con: duckdb.DuckDBPyConnection) -> None:
    """Define ``ukb_plain_text`` on ``con``."""
    con.execute(PLAIN_TEXT_MACRO)

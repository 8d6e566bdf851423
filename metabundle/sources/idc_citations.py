"""Imaging Data Commons citations as plain text, made once at build time.

idc-index-data ships each data source's APA citation as HTML-flavoured text (the title
in ``<i>``, ``&amp;``, hard line wraps). The parse stores beside it the plain text and
the title (:func:`register_citation_functions` makes them SQL functions), so the tools
show and parse citations without cleaning them per call.
"""

from __future__ import annotations

import html
import re

import duckdb

_TAG = re.compile(r"<[^>]+>")
_TITLE = re.compile(r"<i>(.*?)</i>", re.S)


def plain_citation(text: str | None) -> str | None:
    """The citation as plain text: markup such as ``<i>`` removed, HTML entities
    (``&amp;``) decoded and the hard line wraps joined."""
    if text is None:
        return None
    return " ".join(html.unescape(_TAG.sub("", text)).split())


def citation_title(text: str | None) -> str | None:
    """The title an APA citation sets in italics, as plain text (``None`` without one)."""
    found = _TITLE.search(text or "")
    return plain_citation(html.unescape(found.group(1))) if found else None


def register_citation_functions(con: duckdb.DuckDBPyConnection) -> None:
    """Make :func:`plain_citation` and :func:`citation_title` SQL functions of ``con``."""
    for function in (plain_citation, citation_title):
        con.create_function(
            function.__name__, function, ["VARCHAR"], "VARCHAR", null_handling="special"
        )

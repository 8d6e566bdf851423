"""Cleaning upstream text: whitespace, HTML entities and the HTML of GapExchange."""

from __future__ import annotations

import html
import re

TAG_RE = re.compile(r"<[^>]*>")


def collapse(text: str | None) -> str | None:
    """Collapse runs of whitespace to one space and trim; blank becomes ``None``."""
    if text is None:
        return None
    folded = " ".join(text.split())
    return folded or None


def clean(text: str | None) -> str | None:
    """Decode HTML entities (``Women&#39;s``) and collapse whitespace."""
    if text is not None and "&" in text:
        text = html.unescape(text)
    return collapse(text)


def html_to_text(markup: str | None) -> str | None:
    """Plain text of an HTML fragment: tags become spaces, entities are decoded."""
    if markup is None:
        return None
    return clean(TAG_RE.sub(" ", markup))

"""Showcase links: UK Biobank answers emit only Showcase URLs
(``https://biobank.ndph.ox.ac.uk/ukb/``)."""

from __future__ import annotations

SHOWCASE = "https://biobank.ndph.ox.ac.uk/ukb/"


def showcase_url(url: str | None) -> str | None:
    """``url`` when it is a Showcase page, else None (only Showcase URLs are emitted)."""
    return url if url and url.startswith(SHOWCASE) else None


def field_url(field_id: int) -> str:
    return f"{SHOWCASE}field.cgi?id={field_id}"

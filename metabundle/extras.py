"""The optional extras of the package, the modules each brings, and the one sentence a
command says when the extra it needs is not installed.

The base install serves, downloads, verifies and inspects releases; ``build`` adds the
pipeline, ``openai`` the client that embeds queries for a release embedded through an
OpenAI-compatible server, ``hnswlib`` the reader of hnswlib graphs.
"""

from __future__ import annotations

import importlib.util

from metabundle.errors import ConfigError

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "build": ("dagster", "dagster_webserver", "polars", "idc_index_data", "hnswlib", "openai"),
    "openai": ("openai",),
    "hnswlib": ("hnswlib",),
}


class MissingExtra(ConfigError):
    """What a command needs is in an extra this install lacks."""


def install_hint(extra: str, what: str, module: str) -> str:
    """One sentence: ``what`` needs ``extra``, missing here, and the command that adds it."""
    return (
        f"{what} needs the {extra!r} extra, which this install lacks (no module {module}): "
        f"pip install 'metabundle[{extra}]'"
    )


def require_extra(extra: str, what: str) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` can be imported."""
    for module in EXTRA_MODULES[extra]:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(install_hint(extra, what, module))


def extra_of(error: ImportError) -> str | None:
    """The smallest extra that brings the module ``error`` could not import, if any."""
    top = (error.name or "").partition(".")[0]
    holders = [extra for extra, modules in EXTRA_MODULES.items() if top in modules]
    return min(holders, key=lambda extra: len(EXTRA_MODULES[extra]), default=None)

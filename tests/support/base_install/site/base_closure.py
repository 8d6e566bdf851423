"""The distributions a base install of metabundle (no extras) holds, and an import hook
that makes every other distribution's modules fail to import, as they would where
``pip install metabundle`` put nothing else (``sitecustomize.py`` beside it installs it).

The closure is computed from ``pyproject.toml``'s ``[project] dependencies`` and each
installed distribution's requirements, markers evaluated without any extra.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path
from types import ModuleType

PYPROJECT = Path(__file__).resolve().parents[4] / "pyproject.toml"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(texts: list[str], extras: frozenset[str]) -> list[tuple[str, frozenset[str]]]:
    """``(name, its extras)`` of the requirements that apply on this interpreter without
    extras or with one of ``extras`` (those the requirer asked for)."""
    from packaging.requirements import Requirement

    found = []
    for text in texts:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": e}) for e in {"", *extras}):
            found.append((canonical(requirement.name), frozenset(requirement.extras)))
    return found


def _requirement_names(texts: list[str]) -> list[str]:
    """The names of the requirements that apply without extras, on this interpreter."""
    return [name for name, _ in _requirements(texts, frozenset())]


def base_closure() -> set[str]:
    """Every distribution a base install of metabundle holds (canonical names)."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    pending = _requirements(project["dependencies"], frozenset())
    seen: set[tuple[str, frozenset[str]]] = set()
    while pending:
        item = pending.pop()
        if item in seen:
            continue
        seen.add(item)
        name, extras = item
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        pending.extend(_requirements(requires, extras))
    return {name for name, _ in seen}


def blocked_modules() -> frozenset[str]:
    """Top-level modules that only distributions outside the base closure provide."""
    allowed = base_closure() | {"metabundle"}
    return frozenset(
        top
        for top, dists in packages_distributions().items()
        if top not in sys.stdlib_module_names
        and not any(canonical(dist) in allowed for dist in dists)
    )


class BaseInstallFinder(importlib.abc.MetaPathFinder):
    """Refuses the modules a base install lacks, as a missing package would."""

    def __init__(self, blocked: frozenset[str]) -> None:
        self.blocked = blocked

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def install() -> None:
    blocked = blocked_modules()
    for name in [n for n in sys.modules if n.partition(".")[0] in blocked]:
        del sys.modules[name]  # what working out the closure imported
    sys.meta_path.insert(0, BaseInstallFinder(blocked))

"""Dagster resources: the build configuration, made from the build's settings model.

:data:`BuildConfig` has one optional field per field of
:class:`~metabundle.config.BuildSettings` (paths and the upstream as text, lists as
lists), so a run's configuration, the CLI's flags and the environment fill the same
model: what a run leaves unset comes from ``METABUNDLE_*`` variables, then defaults.
"""

from __future__ import annotations

from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

from dagster import ConfigurableResource
from pydantic import create_model

from metabundle.config import BuildSettings
from metabundle.upstream import Upstream


class BuildConfigBase(ConfigurableResource):  # type: ignore[type-arg]
    """What :data:`BuildConfig` does with its fields."""

    def settings(self) -> BuildSettings:
        """The build settings: this configuration over the environment and defaults."""
        values = {name: getattr(self, name) for name in BuildSettings.model_fields}
        return BuildSettings.load(**{k: v for k, v in values.items() if v not in (None, [])})

    @classmethod
    def from_settings(cls, settings: BuildSettings) -> BuildConfigBase:
        """The configuration that makes ``settings`` again in a Dagster run."""
        return cls(**{n: _plain(getattr(settings, n)) for n in BuildSettings.model_fields})


def _plain(value: object) -> object:
    """A settings value as Dagster configuration holds it."""
    if isinstance(value, Upstream):
        return value.base
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def _config_type(annotation: Any) -> Any:
    """The Dagster-friendly type of a settings field: a list, a flag, a number or text."""
    if get_origin(annotation) is tuple:
        return list[str] | None
    kinds = set(get_args(annotation)) if get_origin(annotation) in (Union, UnionType) else set()
    for plain in (bool, int, float):
        if annotation is plain or plain in kinds:
            return plain | None
    return str | None


BuildConfig = create_model(
    "BuildConfig",
    __base__=BuildConfigBase,
    __module__=__name__,
    __doc__="Where a build reads from and writes to: one field per build setting.",
    **{
        name: (_config_type(field.annotation), None)
        for name, field in BuildSettings.model_fields.items()
    },
)

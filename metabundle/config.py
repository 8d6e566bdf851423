"""The build's settings: one model that flags, ``METABUNDLE_*`` variables and the
Dagster resource all fill (:mod:`metabundle.settings` for the rules).

:class:`BuildSettings` is everything a build needs. The CLI calls
:meth:`~metabundle.settings.Settings.load` with its flags, the Dagster resource
(:class:`metabundle.orchestration.resources.BuildConfig`, made from this model's fields)
with its configuration; what neither gives comes from the environment, then the
defaults. Paths are resolved here once. A new option is one field here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from metabundle.errors import ConfigError
from metabundle.schemas.sources import DESCRIPTORS
from metabundle.settings import CommaList, RuntimeSettings
from metabundle.upstream import Upstream

PROFILES: tuple[str, ...] = ("complete", "dev")
"""``complete`` (the default) reads everything each upstream publishes; ``dev`` is a
small fixed selection for development and tests, and every release built with it
says so in its coverage block."""
EMBEDDING_PROVIDERS: tuple[str, ...] = ("minilm", "wordllama", "openai", "none")
ANN_BACKENDS: tuple[str, ...] = ("auto", "usearch", "hnswlib", "bitscan")
DEFAULT_SHARD_TEXTS = 50_000
DEFAULT_CRON = "0 4 * * 1"  # Mondays 04:00 UTC


def _one_of(name: str, choices: tuple[str, ...]) -> Any:
    def check(cls: type[BuildSettings], value: str) -> str:
        if value not in choices:
            option = cls.option(name)
            raise ConfigError(f"Unknown {option} {value!r}; choose from {', '.join(choices)}")
        return value

    return field_validator(name)(classmethod(check))


class BuildSettings(RuntimeSettings):
    """Everything that decides what a build reads and where it writes."""

    flags: ClassVar[dict[str, str]] = {
        "out": "--out",
        "cache": "--cache",
        "sources": "--sources",
        "upstream": "--upstream",
        "profile": "--profile",
        "dbgap_studies": "--dbgap-studies",
        "omop_vocab": "--omop-vocab",
        "embedding_provider": "--embeddings",
        "ann_backend": "--ann-backend",
        "release_version": "--release-version",
    }

    out: Path = Field(
        default=Path("build"),
        description="Output folder (releases, work pointers, the cache by default).",
    )
    cache: Path | None = Field(default=None, description="Cache folder (default <out>/cache).")
    sources: CommaList = Field(default=(), description="Sources to build (default: all).")
    upstream: Annotated[Upstream, NoDecode] = Field(
        default=Upstream(), description="Mirror base: an http(s) URL or a local folder."
    )
    profile: str = Field(default="complete", description="complete or dev.")
    dbgap_studies: CommaList = Field(default=(), description="dbGaP studies to build.")
    omop_vocab: CommaList = Field(default=(), description="Athena export folders or zips.")
    embedding_provider: str = Field(default="minilm", description="The embedding provider.")
    ann_backend: str = Field(default="auto", description="The ANN index backend.")
    release_version: str | None = Field(default=None, description="The release's version.")
    embed_shard_texts: int = Field(
        default=DEFAULT_SHARD_TEXTS, ge=1, description="Distinct texts per embedding shard."
    )
    release_cron: str = Field(default=DEFAULT_CRON, description="The weekly rebuild's cron.")

    _profile = _one_of("profile", PROFILES)
    _provider = _one_of("embedding_provider", EMBEDDING_PROVIDERS)
    _backend = _one_of("ann_backend", ANN_BACKENDS)

    @field_validator("upstream", mode="before")
    @classmethod
    def _parse_upstream(cls, value: object) -> object:
        if value is not None and not isinstance(value, str):
            return value
        try:
            return Upstream.parse(value)
        except ConfigError as error:
            raise ConfigError(str(error).replace("--upstream", cls.option("upstream"), 1)) from None

    @field_validator("sources")
    @classmethod
    def _known_sources(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [s for s in value if s not in DESCRIPTORS]
        if unknown:
            choices = ", ".join(DESCRIPTORS)
            option = cls.option("sources")
            raise ConfigError(f"Unknown source {unknown[0]!r} in {option}; choose from {choices}")
        return tuple(dict.fromkeys(value)) or tuple(DESCRIPTORS)

    @field_validator("out", "cache")
    @classmethod
    def _resolved(cls, value: Path | None) -> Path | None:
        return value.expanduser().resolve() if value is not None else None

    @property
    def out_dir(self) -> Path:
        return self.out

    @property
    def cache_dir(self) -> Path:
        return self.cache or self.out / "cache"

    @property
    def releases_dir(self) -> Path:
        return self.out_dir / "releases"

    @property
    def current_link(self) -> Path:
        return self.out_dir / "current"

    @property
    def work_dir(self) -> Path:
        """Pointers to the latest staged tables of each source and search step."""
        return self.out_dir / "work"

    def with_sources(self, sources: tuple[str, ...]) -> BuildSettings:
        return self.model_copy(update={"sources": sources})

"""Dagster resources: the build configuration and progress reporting."""

from __future__ import annotations

from dagster import ConfigurableResource

from metabundle.config import BuildSettings, make_settings
from metabundle.sources.registry import source_names


class BuildConfig(ConfigurableResource):  # type: ignore[type-arg]
    """Where a build reads from and writes to; mirrors :class:`BuildSettings`.

    Empty values fall back to ``METABUNDLE_*`` environment variables, then defaults.
    """

    out_dir: str = ""
    cache_dir: str = ""
    sources: list[str] = []  # noqa: RUF012  (pydantic copies defaults)
    upstream: str = ""
    profile: str = ""
    dbgap_studies: list[str] = []  # noqa: RUF012  (pydantic copies defaults)
    omop_vocab: list[str] = []  # noqa: RUF012  (pydantic copies defaults)
    embedding_provider: str = ""
    ann_backend: str = ""
    release_version: str = ""
    http_attempts: int = 0
    http_backoff_s: float = -1.0

    def settings(self) -> BuildSettings:
        return make_settings(
            available_sources=source_names(),
            out_dir=self.out_dir or None,
            cache_dir=self.cache_dir or None,
            sources=tuple(self.sources) or None,
            upstream=self.upstream or None,
            profile=self.profile or None,
            dbgap_studies=tuple(self.dbgap_studies) or None,
            omop_vocab=tuple(self.omop_vocab) or None,
            embedding_provider=self.embedding_provider or None,
            ann_backend=self.ann_backend or None,
            release_version=self.release_version or None,
            http_attempts=self.http_attempts or None,
            http_backoff_s=self.http_backoff_s if self.http_backoff_s >= 0 else None,
        )

    @classmethod
    def from_settings(cls, settings: BuildSettings) -> BuildConfig:
        return cls(**settings.to_config())  # type: ignore[arg-type]

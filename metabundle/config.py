"""Settings from ``METABUNDLE_*`` environment variables and command-line flags.

:class:`BuildSettings` is everything a build needs; the CLI fills it from flags, the
Dagster definitions from the environment. Paths are resolved here once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from metabundle.errors import ConfigError
from metabundle.sources.layout import Upstream

Profile = Literal["complete", "dev"]
PROFILES: tuple[str, ...] = ("complete", "dev")
"""``complete`` (the default) reads everything each upstream publishes; ``dev`` is a
small fixed selection for development and tests, and every release built with it
says so in its coverage block."""
EMBEDDING_PROVIDERS: tuple[str, ...] = ("minilm", "wordllama", "openai", "none")
ANN_BACKENDS: tuple[str, ...] = ("auto", "usearch", "hnswlib", "bitscan")


def env(name: str, default: str | None = None) -> str | None:
    """``METABUNDLE_<name>`` from the environment, or ``default``."""
    value = os.environ.get(f"METABUNDLE_{name}")
    return value if value not in (None, "") else default


def env_flag(name: str, default: bool) -> bool:
    """A boolean ``METABUNDLE_<name>``: 0/false/no/off are false, anything else true."""
    value = env(name)
    if value is None:
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


def split_list(value: str | None) -> tuple[str, ...]:
    """``"a, b,c"`` → ``("a", "b", "c")``; empty items dropped."""
    if not value:
        return ()
    return tuple(item.strip() for item in value.split(",") if item.strip())


@dataclass(frozen=True)
class BuildSettings:
    """Everything that decides what a build reads and where it writes."""

    out_dir: Path
    cache_dir: Path
    sources: tuple[str, ...]
    upstream: Upstream = field(default_factory=Upstream)
    profile: Profile = "complete"
    dbgap_studies: tuple[str, ...] = ()
    omop_vocab: tuple[str, ...] = ()
    embedding_provider: str = "minilm"
    ann_backend: str = "auto"
    release_version: str | None = None
    http_attempts: int = 5
    http_backoff_s: float = 0.5

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
        return replace(self, sources=sources)

    def to_config(self) -> dict[str, object]:
        """Plain values for the Dagster ``BuildConfig`` resource."""
        return {
            "out_dir": str(self.out_dir),
            "cache_dir": str(self.cache_dir),
            "sources": list(self.sources),
            "upstream": self.upstream.base or "",
            "profile": self.profile,
            "dbgap_studies": list(self.dbgap_studies),
            "omop_vocab": list(self.omop_vocab),
            "embedding_provider": self.embedding_provider,
            "ann_backend": self.ann_backend,
            "release_version": self.release_version or "",
            "http_attempts": self.http_attempts,
            "http_backoff_s": self.http_backoff_s,
        }


def make_settings(
    *,
    available_sources: tuple[str, ...],
    out_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    sources: tuple[str, ...] | None = None,
    upstream: str | None = None,
    profile: str | None = None,
    dbgap_studies: tuple[str, ...] | None = None,
    omop_vocab: tuple[str, ...] | None = None,
    embedding_provider: str | None = None,
    ann_backend: str | None = None,
    release_version: str | None = None,
    http_attempts: int | None = None,
    http_backoff_s: float | None = None,
) -> BuildSettings:
    """Validate flags (falling back to ``METABUNDLE_*`` variables) into settings.

    Every problem raises :class:`ConfigError` with one sentence naming the flag.
    """
    out = Path(out_dir or env("OUT", "build") or "build").expanduser().resolve()
    cache = Path(cache_dir or env("CACHE") or out / "cache").expanduser().resolve()
    chosen = sources if sources else split_list(env("SOURCES")) or available_sources
    unknown = [s for s in chosen if s not in available_sources]
    if unknown:
        choices = ", ".join(available_sources)
        raise ConfigError(f"Unknown source {unknown[0]!r} in --sources; choose from {choices}")
    profile_value = profile or env("PROFILE", "complete") or "complete"
    if profile_value not in PROFILES:
        raise ConfigError(f"Unknown --profile {profile_value!r}; choose complete or dev")
    provider = embedding_provider or env("EMBEDDING_PROVIDER", "minilm") or "minilm"
    if provider not in EMBEDDING_PROVIDERS:
        raise ConfigError(
            f"Unknown --embeddings {provider!r}; choose from {', '.join(EMBEDDING_PROVIDERS)}"
        )
    backend = ann_backend or env("ANN_BACKEND", "auto") or "auto"
    if backend not in ANN_BACKENDS:
        raise ConfigError(
            f"Unknown --ann-backend {backend!r}; choose from {', '.join(ANN_BACKENDS)}"
        )
    return BuildSettings(
        out_dir=out,
        cache_dir=cache,
        sources=tuple(dict.fromkeys(chosen)),
        upstream=Upstream.parse(upstream if upstream is not None else env("UPSTREAM")),
        profile=profile_value,  # type: ignore[arg-type]
        dbgap_studies=dbgap_studies or split_list(env("DBGAP_STUDIES")),
        omop_vocab=omop_vocab or split_list(env("OMOP_VOCAB")),
        embedding_provider=provider,
        ann_backend=backend,
        release_version=release_version or env("RELEASE_VERSION"),
        http_attempts=http_attempts or int(env("HTTP_ATTEMPTS", "5") or 5),
        http_backoff_s=http_backoff_s
        if http_backoff_s is not None
        else float(env("HTTP_BACKOFF_S", "0.5") or 0.5),
    )

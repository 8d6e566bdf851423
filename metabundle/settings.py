"""Settings: every option of metabundle is one field of one pydantic settings model.

Each model reads its fields from ``METABUNDLE_<FIELD>`` environment variables when it is
made (so a changed variable counts from the next call on), and values given to
:meth:`Settings.load` (command-line flags, the Dagster resource) take precedence.
No other module reads a ``METABUNDLE_*`` variable. The models, by where they live:

* :class:`RuntimeSettings` (here): what any running process needs, the serving side
  included (release location, query embeddings, SQL workers, the Datasette assets,
  tracebacks);
* :class:`metabundle.config.BuildSettings`: what a build reads and writes;
* a source's or a provider's own options beside its code
  (``sources/aou/api.py``, ``sources/aou/fetch.py``, ``sources/dbgap/fetch.py``,
  ``index/embed/openai_compat.py``).

A list field reads a comma-separated variable (``METABUNDLE_SOURCES=ukb,omop``). A bad
value raises :class:`~metabundle.errors.ConfigError` with one sentence naming the flag
or the variable.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self

from pydantic import BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict, SettingsError

from metabundle.errors import ConfigError

ENV_PREFIX = "METABUNDLE_"
_GIVEN: ContextVar[frozenset[str]] = ContextVar("given", default=frozenset())


def split_list(value: object) -> object:
    """``"a, b,c"`` → ``("a", "b", "c")`` (empty items dropped); other values as given."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    return value


CommaList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(split_list)]
"""A tuple of strings, written as a comma-separated list in its variable."""


class Settings(BaseSettings):
    """The base of every settings model: ``METABUNDLE_*`` variables, frozen values."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,
        frozen=True,
        extra="ignore",
        validate_default=True,
    )
    #: Field → the command-line flag that sets it, for error messages.
    flags: ClassVar[dict[str, str]] = {}

    @classmethod
    def load(cls, **values: Any) -> Self:
        """The model from ``values`` (``None`` means not given), then the environment,
        then the defaults; a :class:`ConfigError` naming the first bad option."""
        given = {name: value for name, value in values.items() if value is not None}
        token = _GIVEN.set(frozenset(given))
        try:
            return cls(**given)
        except ValidationError as error:
            raise ConfigError(cls._describe(error)) from None
        except SettingsError as error:  # a variable that cannot be read at all
            raise ConfigError(str(error)) from None
        finally:
            _GIVEN.reset(token)

    @classmethod
    def current(cls) -> Self:
        """:meth:`load` without values, made once per distinct set of ``METABUNDLE_*``
        variables (a serving process asks on every query; a model takes milliseconds)."""
        environment = tuple(sorted(i for i in os.environ.items() if i[0].startswith(ENV_PREFIX)))
        return _current(cls, environment)  # type: ignore[return-value]

    @classmethod
    def option(cls, field: str) -> str:
        """What set ``field`` in the load under way: its flag when one was given, else
        its variable (for messages)."""
        if field in _GIVEN.get():
            return cls.flags.get(field, f"{ENV_PREFIX}{field.upper()}")
        return f"{ENV_PREFIX}{field.upper()}"

    @classmethod
    def _describe(cls, error: ValidationError) -> str:
        problem = error.errors()[0]
        option = cls.option(str(problem["loc"][0]) if problem["loc"] else "")
        value = problem.get("input")
        message = str(problem["msg"]).removeprefix("Value error, ")
        return f"{option} {value!r} is not valid: {message}"


@lru_cache(maxsize=32)
def _current(model: type[Settings], environment: tuple[tuple[str, str], ...]) -> Settings:
    return model.load()


def _flag(value: object) -> object:
    """0/false/no/off (any case, spaces around) are false; other text is true."""
    if isinstance(value, str):
        return value.strip().lower() not in ("0", "false", "no", "off", "")
    return value


Flag = Annotated[bool, BeforeValidator(_flag)]


class RuntimeSettings(Settings):
    """What any running process reads: the serving side, the CLI, downloads."""

    release: Path | None = Field(
        default=None, description="The release a reading command opens without --release."
    )
    data_dir: Path | None = Field(
        default=None, description="The folder downloads install into (else the platform's)."
    )
    embeddings_enabled: Flag = Field(
        default=True, description="Query embeddings on (0 turns them off: hybrid degrades)."
    )
    sql_workers: int = Field(default=2, ge=1, description="Processes that run run_sql.")
    call_deadline_s: float = Field(
        default=30.0,
        ge=0,
        description="A tool call's queries stop this many seconds after the call began "
        "(query_timeout); run_sql has its own 10 s.",
    )
    mapped_pages_mb: int = Field(
        default=256,
        ge=0,
        description="A serving process lets its pages of the release's memory-mapped files "
        "go after a call when its resident file-backed pages (its libraries' code included) "
        "pass this many MB (0: never).",
    )
    duckdb_kept_mb: int = Field(
        default=64,
        ge=0,
        description="DuckDB memory a serving process keeps between tool calls: once no "
        "call is running, table blocks it has read past this many MB are let go, and "
        "index nodes past it by opening its connection again (0: never).",
    )
    duckdb_memory_mb: int = Field(
        default=2048,
        ge=64,
        description="DuckDB memory of a serving process: each query's working memory and "
        "the release's table blocks and index nodes it reads (see duckdb_kept_mb).",
    )
    duckdb_work_memory_mb: int = Field(
        default=2048,
        ge=256,
        description="DuckDB memory of each working connection (a build's steps, the "
        "release writer, verification): past it DuckDB spills to temporary files, so a "
        "build's memory does not grow with the corpus.",
    )
    duckdb_temp_dir: Path | None = Field(
        default=None,
        description="Where working connections without a folder of their own spill (the "
        "source parses and the index steps spill into their output folders); default "
        "DuckDB's own, .tmp in the current folder, removed when the connection closes.",
    )
    datasette_dir: Path | None = Field(
        default=None, description="The Datasette template folder (else the checkout's)."
    )
    debug: Flag = Field(default=False, description="Show tracebacks instead of one line.")
    publish_to: Path | None = Field(
        default=None, description="The release site folder a publish writes into."
    )
    http_attempts: int = Field(default=5, ge=1, description="Tries per HTTP request.")
    http_backoff_s: float = Field(
        default=0.5, ge=0, description="First retry delay in seconds (doubles each try)."
    )

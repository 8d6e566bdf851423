"""One settings model: flags, ``METABUNDLE_*`` variables and the Dagster resource fill
the same fields, and no module reads a ``METABUNDLE_*`` variable on its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from metabundle.config import BuildSettings
from metabundle.errors import ConfigError
from metabundle.index.embed.openai_compat import OpenAISettings
from metabundle.orchestration.resources import BuildConfig
from metabundle.settings import RuntimeSettings
from metabundle.sources.aou.settings import AouSettings
from tests.support.cli import run_cli

PACKAGE = Path(__file__).resolve().parents[2] / "metabundle"
SETTINGS_MODULE = PACKAGE / "settings.py"


def _environment_reads(tree: ast.AST) -> list[int]:
    """Lines that read the environment: ``os.environ.get(...)``, ``os.getenv(...)`` or
    ``os.environ[...]`` read."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            called = ast.unparse(node.func)
            if called.endswith(("environ.get", "getenv")):
                lines.append(node.lineno)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and ast.unparse(node.value).endswith("environ")
        ):
            lines.append(node.lineno)
    return lines


def test_no_module_reads_a_metabundle_variable_itself() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == SETTINGS_MODULE:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        offenders += [f"{path.relative_to(PACKAGE)}:{line}" for line in _environment_reads(tree)]
    assert offenders == []


def test_a_flag_wins_over_its_variable_and_the_variable_over_the_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("METABUNDLE_SOURCES", "ukb, omop")
    monkeypatch.setenv("METABUNDLE_OUT", str(tmp_path / "from-env"))
    from_env = BuildSettings.load()
    assert from_env.sources == ("ukb", "omop")
    assert from_env.out_dir == tmp_path / "from-env"
    assert from_env.cache_dir == tmp_path / "from-env" / "cache"
    flagged = BuildSettings.load(sources="idc", out=tmp_path / "flag", cache=None)
    assert flagged.sources == ("idc",) and flagged.out_dir == tmp_path / "flag"
    monkeypatch.delenv("METABUNDLE_SOURCES")
    assert BuildSettings.load().sources == ("dbgap", "ukb", "aou", "omop", "idc")


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("METABUNDLE_PROFILE", "everything", "Unknown METABUNDLE_PROFILE 'everything'"),
        ("METABUNDLE_EMBED_SHARD_TEXTS", "-5", "METABUNDLE_EMBED_SHARD_TEXTS '-5' is not valid"),
        ("METABUNDLE_HTTP_ATTEMPTS", "many", "METABUNDLE_HTTP_ATTEMPTS 'many' is not valid"),
        ("METABUNDLE_SOURCES", "ukb,nosuch", "Unknown source 'nosuch' in METABUNDLE_SOURCES"),
        ("METABUNDLE_UPSTREAM", "/no/such/folder", "METABUNDLE_UPSTREAM /no/such/folder is"),
    ],
)
def test_a_bad_variable_is_one_sentence_naming_it(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as error:
        BuildSettings.load()
    assert str(error.value).startswith(expected)
    assert "\n" not in str(error.value)


def test_empty_variables_count_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METABUNDLE_OPENAI_DIMENSION", "")
    monkeypatch.setenv("METABUNDLE_AOU_API", "")
    monkeypatch.setenv("METABUNDLE_EMBEDDINGS_ENABLED", "off")
    assert OpenAISettings.load().openai_dimension is None
    assert AouSettings.load().aou_api is None
    assert RuntimeSettings.load().embeddings_enabled is False


def test_a_bad_flag_is_named_as_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"^Unknown --profile 'x'; choose from complete, dev$"):
        BuildSettings.load(profile="x")
    with pytest.raises(ConfigError, match=r"^--upstream /no/such is neither"):
        BuildSettings.load(upstream="/no/such")


def test_the_dagster_resource_has_one_field_per_setting(tmp_path: Path) -> None:
    assert set(BuildConfig.model_fields) == set(BuildSettings.model_fields)
    settings = BuildSettings.load(
        out=tmp_path, sources="ukb,idc", dbgap_studies="phs000007", http_attempts=2
    )
    again = BuildConfig.from_settings(settings).settings()
    assert again == settings
    assert BuildConfig(sources=["omop"], out=str(tmp_path)).settings().sources == ("omop",)


def test_the_cli_reports_a_bad_variable_in_one_line(tmp_path: Path) -> None:
    result = run_cli(
        "build",
        "--out",
        str(tmp_path),
        timeout=60,
        METABUNDLE_EMBEDDING_PROVIDER="bogus",
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "metabundle: Unknown METABUNDLE_EMBEDDING_PROVIDER 'bogus'; choose from minilm, "
        "wordllama, openai, none."
    ]


def test_current_settings_are_made_once_per_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("METABUNDLE_EMBEDDINGS_ENABLED", raising=False)
    first = RuntimeSettings.current()
    assert first is RuntimeSettings.current() and first.embeddings_enabled is True
    monkeypatch.setenv("METABUNDLE_EMBEDDINGS_ENABLED", "0")  # counts from the next call on
    assert RuntimeSettings.current().embeddings_enabled is False
    monkeypatch.setenv("METABUNDLE_SQL_WORKERS", "zero")
    with pytest.raises(ConfigError, match="METABUNDLE_SQL_WORKERS"):
        RuntimeSettings.current()

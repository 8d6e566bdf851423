"""The ``metabundle`` command: build, inspect, search and serve releases.

Each command parses its flags, calls one function of the package and prints the
result. Errors meant for users (:class:`MetabundleError`) print one sentence and
exit with status 1; nothing prints a traceback unless ``METABUNDLE_DEBUG=1``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from metabundle import __version__
from metabundle.config import PROFILES, BuildSettings
from metabundle.errors import ConfigError, MetabundleError
from metabundle.extras import extra_of, install_hint, require_extra

if TYPE_CHECKING:
    from metabundle.search.release import Release

EXIT_USER_ERROR = 1
RELEASE_HELP = (
    "A release folder, a `current` link or a build folder [METABUNDLE_RELEASE, else "
    "./build/current, else the download folder's current]."
)


def _fail(message: str) -> None:
    click.echo(f"metabundle: {message.rstrip('.')}.", err=True)
    sys.exit(EXIT_USER_ERROR)


def _debugging() -> bool:
    """``METABUNDLE_DEBUG``: tracebacks instead of one line (off when unreadable)."""
    from metabundle.settings import RuntimeSettings

    try:
        return RuntimeSettings.load().debug
    except ConfigError:
        return False


class MetabundleGroup(click.Group):
    """A click group that turns user errors into one line on stderr."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MetabundleError as error:
            if _debugging():
                raise
            _fail(str(error))
        except KeyboardInterrupt:
            click.echo("metabundle: interrupted.", err=True)
            sys.exit(130)
        except BrokenPipeError:  # the reader went away (e.g. `| head`): stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except ImportError as error:
            extra = extra_of(error)
            if extra is None or _debugging():
                raise
            _fail(install_hint(extra, f"metabundle {ctx.invoked_subcommand}", str(error.name)))
        except Exception as error:
            if _debugging():
                raise
            _fail(
                f"unexpected {type(error).__name__}: {error} "
                "(this is a bug; METABUNDLE_DEBUG=1 shows the traceback)"
            )
        return None


@click.group(cls=MetabundleGroup)
@click.version_option(__version__, prog_name="metabundle")
def main() -> None:
    """Build and use metabundle releases: one offline search artifact over dbGaP,
    UK Biobank, All of Us, the OMOP vocabularies and Imaging Data Commons."""


def _check_writable(folder: Path, flag: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as error:
        raise ConfigError(f"Cannot write to {flag} {folder}: {error.strerror}") from None


def _check_upstream(settings: BuildSettings) -> None:
    """Fail fast, in one sentence, when a mirror URL given with --upstream is down or,
    without a mirror, when a public host a selected source needs does not answer."""
    base = settings.upstream.base
    if base is None:
        from metabundle.sources.reach import check_public_hosts

        check_public_hosts(settings)
        return
    if not base.startswith(("http://", "https://")):
        return
    import httpx

    try:
        httpx.get(base + "/", timeout=10.0, follow_redirects=True)
    except httpx.HTTPError as error:
        reason = type(error).__name__
        raise ConfigError(f"Cannot reach --upstream {base} ({reason})") from None


def _settings_from_flags(**flags: Any) -> BuildSettings:
    """The build settings from a command's flags (the unset ones from the environment)."""
    return BuildSettings.load(**flags)


@main.command()
@click.option("--sources", help="Comma-separated sources to build (default: all).")
@click.option("--upstream", help="Mirror base: an http(s) URL or a local folder.")
@click.option("--out", type=click.Path(path_type=Path), help="Output folder [./build].")
@click.option("--cache", type=click.Path(path_type=Path), help="Cache [<out>/cache].")
@click.option(
    "--profile",
    type=click.Choice(PROFILES),
    help="complete (default: everything upstream publishes) or dev (a small selection).",
)
@click.option("--dbgap-studies", help="Comma-separated dbGaP studies (phs000007 or versioned).")
@click.option(
    "--omop-vocab",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Athena vocabulary export (folder or zip); repeat for several.",
)
@click.option("--embeddings", "embedding_provider", help="minilm (default), wordllama, openai.")
@click.option(
    "--ann-backend",
    help="auto (default: usearch where its graph finds 99 % of a source's own neighbours, "
    "else bitscan), usearch, hnswlib or bitscan; each searched as widely as it takes to "
    "find 98 % of the neighbours of other sources' documents.",
)
@click.option("--release-version", help="Force the version (YYYY.MM.DD[.N]).")
def build(**flags: Any) -> None:
    """Fetch, parse, index and write a release; prints the release path."""
    require_extra("build", "metabundle build")
    from metabundle.orchestration.progress import Progress
    from metabundle.orchestration.run import run_build
    from metabundle.terminal import build_output

    flags["omop_vocab"] = tuple(str(Path(p).resolve()) for p in flags["omop_vocab"]) or None
    settings = _settings_from_flags(**flags)
    _check_writable(settings.out_dir, "--out")
    _check_writable(settings.cache_dir, "--cache")
    _check_upstream(settings)
    click.echo(
        f"Building {', '.join(settings.sources)} from {settings.upstream.describe()} "
        f"into {settings.out_dir}",
        err=True,
    )
    sink, live = build_output()
    release = run_build(settings, Progress(sink, live))
    click.echo(str(release))


@main.command()
@click.argument("release", type=click.Path(path_type=Path), required=False)
@click.option(
    "--full/--quick",
    default=True,
    help="--full (the default) re-hashes every file; --quick runs the check a server "
    "runs when it opens the release (structure, sizes, sha256 of the small index files).",
)
def verify(release: Path | None, full: bool) -> None:
    """Re-check every file of a release against its SHA256SUMS and manifest."""
    from metabundle.release.location import find_release

    path = find_release(release)
    if not full:
        from metabundle.release.integrity import check_release_files

        manifest = check_release_files(path)
        click.echo(f"OK {manifest['version']}: {len(manifest['files'])} files, quick check")
        return
    from metabundle.release.verify import verify_release

    report = verify_release(path)
    click.echo(f"OK {report.version}: {report.files} files, {report.bytes:,} bytes verified")


@main.command()
@click.option("--release", type=click.Path(path_type=Path), help=RELEASE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(release: Path | None, as_json: bool) -> None:
    """Summarize a release: version, sources, tables and search setup."""
    from metabundle.release.info import release_summary, summary_text
    from metabundle.release.location import find_release

    summary = release_summary(find_release(release))
    click.echo(json.dumps(summary, indent=2, sort_keys=True) if as_json else summary_text(summary))


@main.command()
@click.option("--to", "destination", required=True, type=click.Path(path_type=Path))
@click.option("--sources", help="Comma-separated sources (default: all).")
@click.option("--upstream", help="Copy from another mirror instead of the public URLs.")
@click.option("--cache", type=click.Path(path_type=Path))
@click.option("--profile", type=click.Choice(PROFILES))
@click.option("--dbgap-studies", help="Comma-separated dbGaP studies.")
def mirror(destination: Path, **flags: Any) -> None:
    """Download the real upstream files into the mirror layout (for offline builds)."""
    require_extra("build", "metabundle mirror")
    from metabundle.mirror import mirror_sources

    settings = _settings_from_flags(out=destination, **flags)
    copied = mirror_sources(settings, destination.resolve(), lambda text: click.echo(text))
    click.echo(f"Mirrored {sum(copied.values())} files into {destination}")


@main.command()
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=Path("build"))
@click.option("--port", type=int, default=3000)
def dagster(out_dir: Path, port: int) -> None:
    """Open the pipeline in the Dagster UI (`dagster dev`), offline, on localhost."""
    require_extra("build", "metabundle dagster")
    from metabundle.orchestration.home import ensure_dagster_home

    home = ensure_dagster_home(out_dir.resolve())
    os.environ.setdefault("METABUNDLE_OUT", str(out_dir.resolve()))
    click.echo(f"DAGSTER_HOME={home}", err=True)
    # this interpreter's dagster, found without PATH (pipx, uvx and services run us by path)
    args = [sys.executable, "-m", "dagster", "dev", "-m", "metabundle.orchestration"]
    os.execv(sys.executable, [*args, "-h", "127.0.0.1", "-p", str(port)])


@main.command()
@click.argument("query")
@click.option("--source", "sources", multiple=True, help="Restrict to a source (repeatable).")
@click.option("--kind", "kinds", multiple=True, help="Restrict to an entity kind (repeatable).")
@click.option("--method", type=click.Choice(["keyword", "semantic", "hybrid"]), default="hybrid")
@click.option("--limit", type=int, default=10, help="Results to show (1..50).")
@click.option("--json", "as_json", is_flag=True, help="Print the search_all payload as JSON.")
@click.option("--release", type=click.Path(path_type=Path), help=RELEASE_HELP)
def search(
    query: str,
    sources: tuple[str, ...],
    kinds: tuple[str, ...],
    method: str,
    limit: int,
    as_json: bool,
    release: Path | None,
) -> None:
    """Search the release (every source, or --source) and print ranked results."""
    from metabundle.release.location import find_release
    from metabundle.search.release import Release
    from metabundle.search.tools import call_tool

    arguments: dict[str, Any] = {"query": query, "method": method, "limit": limit}
    if sources:
        arguments["sources"] = list(sources)
    if kinds:
        arguments["kinds"] = list(kinds)
    with Release.open(find_release(release)) as opened:
        payload = call_tool(opened, "search_all", arguments)
        if as_json:
            click.echo(json.dumps(payload, indent=2, ensure_ascii=False))
        elif "error" not in payload:
            click.echo(_results_text(payload, _dbgap_names(opened, payload["results"])))
    if "error" in payload:
        if not as_json:
            _fail(_error_text(payload["error"]))
        sys.exit(EXIT_USER_ERROR)


def _error_text(error: dict[str, Any]) -> str:
    """A refused search: its message and, for something this release left out, how to
    add it (``details.remedy``)."""
    remedy = (error.get("details") or {}).get("remedy")
    return error["message"] + (f"\nto add it: {remedy}" if remedy else "")


def _dbgap_names(release: Release, results: list[dict[str, Any]]) -> dict[str, str]:
    """The names of the studies and datasets of the dbGaP hits among ``results``, so
    hits of one title (every study has a "Body mass index") can be told apart."""
    from metabundle.search.services.dbgap.queries import accession_names

    accessions = {
        item[key]
        for item in results
        if item["source"] == "dbgap" and item["kind"] != "study"
        for key in ("study_id", "parent_id")
        if item.get(key)
    }
    return accession_names(release, sorted(accessions)) if accessions else {}


def _dbgap_context(item: dict[str, Any], names: dict[str, str]) -> str | None:
    """``study: NAME (phs…)`` of a dbGaP hit below a study, with the dataset of a
    variable; ``None`` for any other hit."""
    if item["source"] != "dbgap" or item["kind"] == "study" or not item.get("study_id"):
        return None
    parts = [("study", item["study_id"])]
    if item["kind"] == "variable" and item.get("parent_id"):
        parts.append(("dataset", item["parent_id"]))
    return "; ".join(
        f"{label}: {names[accession]} ({accession})"
        if accession in names
        else f"{label} {accession}"
        for label, accession in parts
    )


def _results_text(payload: dict[str, Any], names: dict[str, str]) -> str:
    """A search_all payload for a reader: how it was ranked, what qualifies the answer
    (a clamped limit, low confidence), then the ranked hits, dbGaP hits
    with their study and dataset (``names``: accession → name)."""
    from metabundle.search.tools import CLAMPED_KEY

    retrieval = payload["retrieval"]
    lines = [f"method: {retrieval['effective_method']}"]
    if retrieval["degraded"]:
        lines[0] += f" (degraded: {retrieval['degraded_reason']})"
    lines += [f"note: {note['message']}" for note in payload.get(CLAMPED_KEY, [])]
    if retrieval["low_confidence"]:
        lines.append(f"low confidence: {retrieval['low_confidence_rule']}.")
    for item in payload["results"]:
        lines.append(
            f"{item['rank']:>3}. [{item['source']}/{item['kind']}] {item['id']}  {item['title']}"
        )
        context = _dbgap_context(item, names)
        if context:
            lines.append(f"     {context}")
        if item.get("canonical_url"):
            lines.append(f"     {item['canonical_url']}")
    if not payload["results"]:
        lines.append("no results")
    return "\n".join(lines)


def _host_port(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) as a (host, port) pair."""
    if value is None:
        return None
    host, _, port = value.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"expected HOST:PORT such as 127.0.0.1:8765, got {value!r}")
    return host, int(port)


@main.command("mcp")
@click.option(
    "--release",
    "release_path",
    type=click.Path(path_type=Path),
    help=RELEASE_HELP,
)
@click.option(
    "--http",
    metavar="HOST:PORT",
    callback=_host_port,
    help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio. Use a loopback "
    "address such as 127.0.0.1:8765: the server has no authentication.",
)
@click.option(
    "--print-config",
    type=click.Choice(["claude-desktop", "vscode", "cursor", "claude-code"]),
    help="Print the client's configuration for this release (absolute paths to this "
    "install's executable and the release) instead of serving.",
)
def mcp_command(
    release_path: Path | None, http: tuple[str, int] | None, print_config: str | None
) -> None:
    """Serve a release to AI agents over MCP (stdio unless --http is given), or print a
    client's configuration for it with --print-config."""
    from metabundle.release.location import find_release

    if print_config is not None:
        from metabundle.mcp.client_config import client_config, where_it_goes

        config = client_config(print_config, release_path)
        click.echo(json.dumps(config, indent=2))
        click.echo(where_it_goes(print_config), err=True)
        return

    release = find_release(release_path)  # a bad path fails before the slow imports
    from metabundle.mcp.server import serve

    serve(release, http, lambda text: click.echo(f"metabundle: {text}", err=True))


# -- publishing, downloading and comparing releases ---------------------------------------


@main.command()
@click.option("--release", type=click.Path(path_type=Path), help=RELEASE_HELP)
@click.option(
    "--to",
    "target",
    type=click.Path(path_type=Path),
    help="The site folder to publish into [METABUNDLE_PUBLISH_TO].",
)
@click.option("--level", type=click.IntRange(1, 22), default=3, help="zstd level [3].")
def publish(release: Path | None, target: Path | None, level: int) -> None:
    """Publish a release into a static site folder (serve it with any web server or
    object store); a version already published with the same files is left as is."""
    from metabundle.release.location import find_release
    from metabundle.release.publish import publish_release, require_target

    result = publish_release(
        find_release(release),
        require_target(target),
        level=level,
        report=lambda t: click.echo(t, err=True),
    )
    saved = f"{result.size:,} bytes stored as {result.stored_size:,}"
    verb = "published" if result.status == "published" else "already published, unchanged"
    click.echo(f"{result.version} {verb}: {result.files} files, {saved}", err=True)
    click.echo(str(result.path))


@main.command()
@click.argument("version", default="latest")
@click.option("--from", "base_url", required=True, help="Base URL of a published release site.")
@click.option(
    "--dest",
    type=click.Path(path_type=Path),
    help="Install folder [METABUNDLE_DATA_DIR, else the platform's user data folder].",
)
def download(version: str, base_url: str, dest: Path | None) -> None:
    """Download VERSION (default: latest) from a release site, verify every file and
    make it the current release; an interrupted download resumes where it stopped."""
    from metabundle.http_client import RetryPolicy
    from metabundle.release.download import download_release, terminal_progress
    from metabundle.settings import RuntimeSettings

    runtime = RuntimeSettings.load()
    retry = RetryPolicy(attempts=runtime.http_attempts, base_delay_s=runtime.http_backoff_s)
    progress = terminal_progress(sys.stderr)
    result = download_release(base_url, version, dest, progress=progress, retry=retry)
    if result.already_installed:
        click.echo(f"{result.version} is already installed; it is now current", err=True)
    else:
        resumed = f", {result.resumed_files} resumed" if result.resumed_files else ""
        click.echo(
            f"{result.version} installed and verified ({result.downloaded_bytes:,} bytes "
            f"downloaded{resumed}); it is now current",
            err=True,
        )
    click.echo(str(result.path))


@main.command()
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--examples", type=click.IntRange(0, 100), default=5, help="Keys shown per change.")
def diff(old: Path, new: Path, as_json: bool, examples: int) -> None:
    """Compare two releases: sources, tables, row counts and the entities added,
    removed or changed (by primary key) in each source."""
    from metabundle.release.diff import diff_releases, diff_text
    from metabundle.release.pointer import resolve_release

    result = diff_releases(resolve_release(old), resolve_release(new), examples=examples)
    click.echo(json.dumps(result, indent=2, default=str) if as_json else diff_text(result))


@main.command("datasette")
@click.option("--release", "release_path", type=click.Path(path_type=Path), help=RELEASE_HELP)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(1, 65535), default=8001, show_default=True)
@click.option(
    "--publish-dir",
    type=click.Path(path_type=Path),
    help="Instead of serving, write a deployment folder here (release copy, Dockerfile, "
    "plugin install line, publish.sh for `datasette publish`).",
)
@click.option(
    "--install",
    help="pip requirement of the plugin in a --publish-dir deployment "
    "[metabundle==<this version>]; a local wheel or sdist path is copied in.",
)
def datasette_command(
    release_path: Path | None,
    host: str,
    port: int,
    publish_dir: Path | None,
    install: str | None,
) -> None:
    """Browse and search a release in Datasette, served read-only (immutable), with
    /-/search and the JSON API /-/api; or write a deployment with --publish-dir."""
    from metabundle.release.location import find_release

    release = find_release(release_path)  # a bad path fails before the slow imports
    from metabundle.datasette_plugin.serve import serve, write_publish_dir

    if publish_dir is not None:
        click.echo(str(write_publish_dir(release, publish_dir, install)))
        return
    serve(release, host, port, lambda text: click.echo(f"metabundle: {text}", err=True))


@main.command("call")
@click.argument("tool", required=False)
@click.argument("arguments", required=False)
@click.option("--release", "release_path", type=click.Path(path_type=Path), help=RELEASE_HELP)
def call_command(tool: str | None, arguments: str | None, release_path: Path | None) -> None:
    """Call any tool of the search core with JSON ARGUMENTS and print its payload: the
    same JSON the MCP server and /-/api return. Without TOOL, list the release's tools
    (none of a source it was built without)."""
    from metabundle.release.location import find_release
    from metabundle.search.release import Release
    from metabundle.search.tools import call_tool, release_tools

    if tool is None:
        with Release.open(find_release(release_path)) as opened:
            for spec in release_tools(opened):
                click.echo(f"{spec.name:<30} {spec.description.splitlines()[0][:70]}")
        return
    try:
        parsed = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError as error:
        message = f"ARGUMENTS is not valid JSON ({error.msg} at column {error.colno})"
        raise ConfigError(message) from None
    with Release.open(find_release(release_path)) as opened:
        payload = call_tool(opened, tool, parsed)
    click.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))
    if "error" in payload:
        sys.exit(EXIT_USER_ERROR)


@main.command("idc-manifest")
@click.option("--filters", required=True, help="build_cohort filters as JSON.")
@click.option("--provider", type=click.Choice(["aws", "gcs"]), default="aws", show_default=True)
@click.option("--idc-version", type=int, help="An earlier IDC data version (e.g. 20).")
@click.option("--release", "release_path", type=click.Path(path_type=Path), help=RELEASE_HELP)
def idc_manifest(
    filters: str, provider: str, idc_version: int | None, release_path: Path | None
) -> None:
    """Write the s5cmd manifest of every series an Imaging Data Commons selection
    holds to standard output, streamed (get_cohort_urls pages the same selection)."""
    from metabundle.release.location import find_release
    from metabundle.search.errors import ToolError
    from metabundle.search.release import Release
    from metabundle.search.services.idc.urls import cohort_manifest

    try:
        parsed = json.loads(filters)
    except json.JSONDecodeError as error:
        message = f"--filters is not valid JSON ({error.msg} at column {error.colno})"
        raise ConfigError(message) from None
    with Release.open(find_release(release_path)) as opened:
        try:
            for line in cohort_manifest(opened, parsed, provider, idc_version):
                click.echo(line)
        except ToolError as error:
            _fail(error.message)


if __name__ == "__main__":
    main()

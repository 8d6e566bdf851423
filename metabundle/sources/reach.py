"""Before a build reads the public sources: is each host it needs reachable?

Every selected source names the public addresses its fetch reads first
(:attr:`SourceSpec.public_urls`); each distinct host is asked once, with a short
timeout and no retries, and the first that cannot be reached stops the build in one
sentence that names it and the way to build without it. A machine without network
learns that in seconds instead of after every source's retries.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from metabundle.config import BuildSettings
from metabundle.errors import ConfigError
from metabundle.sources.registry import get_source, with_dependencies

PROBE_TIMEOUT_S = 5.0
OFFLINE_REMEDY = (
    "build from a mirror with --upstream DIR_OR_URL (or METABUNDLE_UPSTREAM), for "
    "example one made on a machine with network by `metabundle mirror --to DIR`"
)


def hosts_to_probe(settings: BuildSettings) -> dict[str, tuple[str, str]]:
    """Each distinct ``scheme://host`` the selected sources read first → (a URL on it,
    the first source that needs it)."""
    hosts: dict[str, tuple[str, str]] = {}
    for name in with_dependencies(settings.sources):
        for url in get_source(name).public_urls(settings):
            parts = urlsplit(url)
            hosts.setdefault(f"{parts.scheme}://{parts.netloc}", (url, name))
    return hosts


def check_public_hosts(settings: BuildSettings) -> None:
    """Raise :class:`ConfigError` naming the first host that does not answer."""
    with httpx.Client(timeout=PROBE_TIMEOUT_S, follow_redirects=False) as client:
        for host, (url, source) in hosts_to_probe(settings).items():
            try:
                client.head(url)
            except httpx.HTTPError as error:
                raise ConfigError(
                    f"Cannot reach {urlsplit(host).netloc} ({type(error).__name__}), which "
                    f"the {source} source is read from; {OFFLINE_REMEDY}"
                ) from None

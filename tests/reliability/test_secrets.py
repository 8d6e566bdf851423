"""No secrets in the release: the small build ran with credentials in its environment
(embedding API keys, cloud keys) that no byte of the release may contain; and a
mirror URL's password must not be recorded as the source's upstream."""

from __future__ import annotations

import mmap
from pathlib import Path

from metabundle.upstream import Upstream
from tests.reliability.conftest import SECRET, SECRET_ENV, FlakyBuild


def contains(path: Path, needle: bytes) -> bool:
    if path.stat().st_size == 0:
        return False
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return data.find(needle) != -1


def test_the_release_holds_no_credential_of_the_build_environment(
    flaky_build: FlakyBuild,
) -> None:
    assert set(SECRET_ENV) >= {"METABUNDLE_OPENAI_API_KEY", "OPENAI_API_KEY"}
    files = [p for p in sorted(flaky_build.build.release.rglob("*")) if p.is_file()]
    assert len(files) > 10
    leaking = [
        str(p.relative_to(flaky_build.build.release)) for p in files if contains(p, SECRET.encode())
    ]
    assert not leaking, f"the release contains a credential of the build machine: {leaking}"


def test_a_password_in_the_mirror_url_is_not_recorded() -> None:
    upstream = Upstream.parse(f"https://mirror-user:{SECRET}@mirror.example.org/metadata")
    assert SECRET not in upstream.describe()

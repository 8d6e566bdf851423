"""Writable copies of parts of the read-only upstream mirror, the edits tests make to
them (a truncated file, a renamed column, one changed record), and the mirror the
session serves (the upstream linked, plus generated Imaging Data Commons files)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from tests.support.idc_generated import write_generated_mirror

OMITTED_IDC_INDEX = "ann_group_index"
"""The one specialized IDC index the served mirror leaves out."""


@dataclass(frozen=True)
class ServedMirror:
    """The folder the session's mirror server serves and the generated IDC files in it."""

    root: Path
    generated: dict[str, Path]


def served_mirror_at(upstream: Path, root: Path) -> ServedMirror:
    """``upstream`` linked (never copied) into ``root``, with the IDC files the mirror
    lacks GENERATED beside it from the package's schemas (but :data:`OMITTED_IDC_INDEX`)."""
    for entry in upstream.iterdir():
        (root / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    return ServedMirror(root, write_generated_mirror(root, omit=(OMITTED_IDC_INDEX,)))


def writable_copy(upstream: Path, root: Path, parts: Iterable[str]) -> Path:
    """Copy ``parts`` (files or folders under ``upstream``) into ``root`` with the same
    layout; the copies are writable even though the mirror is not."""
    for part in parts:
        source = upstream / part
        files = (
            [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
        )
        for file in files:
            target = root / file.relative_to(upstream)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target)
    return root


def edit_lines(path: Path, change: Callable[[list[str]], list[str]]) -> None:
    """Rewrite ``path`` (UTF-8 text) through ``change`` over its lines (ends kept)."""
    text = path.read_text(encoding="utf-8-sig")
    path.write_text("".join(change(text.splitlines(keepends=True))), encoding="utf-8")


def truncate_mid_line(path: Path, fraction: float = 0.5) -> int:
    """Cut ``path`` about ``fraction`` of the way in, inside a line (not at its end);
    the number of bytes kept."""
    data = path.read_bytes()
    cut = int(len(data) * fraction)
    while cut < len(data) and data[cut - 1 : cut + 1].count(b"\n"):
        cut += 1
    path.write_bytes(data[:cut])
    return cut


def set_tsv_field(path: Path, key: str, column: str, value: str) -> None:
    """Set ``column`` of the row whose first cell is ``key`` in a tab-separated file."""

    def change(lines: list[str]) -> list[str]:
        header = lines[0].rstrip("\r\n").split("\t")
        index = header.index(column)
        found = False
        for number, line in enumerate(lines[1:], start=1):
            cells = line.rstrip("\r\n").split("\t")
            if cells[0] == key:
                cells[index] = value
                lines[number] = "\t".join(cells) + "\n"
                found = True
        assert found, f"{path.name} has no row {key}"
        return lines

    edit_lines(path, change)

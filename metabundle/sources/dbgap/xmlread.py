"""Reading dbGaP XML files with the standard library, failing with the file's name.

Every dbGaP XML file (GapExchange, data dictionary, variable report) is small (the
largest data dictionary is a few MB), so each is read whole and parsed in one call
(:func:`xml.etree.ElementTree.fromstring`); ``iterparse`` was half again as slow over
the 2,000 dictionaries of the mirror and saves no memory worth having here.
Malformed or truncated XML raises :class:`ParseError` naming the file and the line.

One repair is made, because the real FTP tree needs it: a file that declares UTF-8
but holds Windows-1252 bytes (``phs000218.v23`` ``TARGET_NBL_Subject_Phenotypes``
has a bare ``0xAE`` for ®) is decoded as Windows-1252 and parsed again; callers are
told which encoding was used.

ElementTree keeps no positions, so :class:`ElementLines` finds the line of a record
element (a ``<variable>`` set aside as malformed) with a second, expat-only pass over
the file, made only when one is needed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from metabundle.errors import ParseError
from metabundle.sources.dbgap.text import collapse

SOURCE = "dbgap"
UTF8 = "utf-8"
CP1252 = "cp1252"


@dataclass(frozen=True)
class XmlDocument:
    """The parsed root of one file and the text encoding it was read with."""

    root: ET.Element
    encoding: str


def read_xml(path: Path, name: str) -> XmlDocument:
    """Parse ``path`` (reported as ``name``); a :class:`ParseError` when malformed."""
    data = path.read_bytes()
    try:
        return XmlDocument(ET.fromstring(data), UTF8)
    except ET.ParseError as error:
        text = _misdeclared_text(data)
        if text is None:
            raise _parse_error(name, error) from None
    try:
        return XmlDocument(ET.fromstring(text), CP1252)
    except ET.ParseError as error:
        raise _parse_error(name, error) from None


def _misdeclared_text(data: bytes) -> str | None:
    """The text of a file whose bytes are not UTF-8 although it does not say so."""
    try:
        data.decode(UTF8)
    except UnicodeDecodeError:
        pass
    else:
        return None
    declared = re.match(rb"<\?xml[^>]*encoding=[\"']([A-Za-z0-9_.-]+)", data.lstrip())
    if declared is not None and declared[1].lower() not in (b"utf-8", b"utf8"):
        return None
    return data.decode(CP1252, errors="replace")


def _parse_error(name: str, error: ET.ParseError) -> ParseError:
    line, column = getattr(error, "position", (None, None))
    reason = re.sub(r": line \d+, column \d+$", "", str(error))
    if column is not None:
        reason = f"{reason} at column {column}"
    return ParseError(SOURCE, name, f"malformed XML ({reason})", line=line)


def text_of(element: ET.Element | None) -> str | None:
    """An element's text with whitespace collapsed; ``None`` when absent or blank."""
    if element is None or element.text is None:
        return None
    return collapse(element.text)


def children(element: ET.Element, tag: str) -> Iterator[ET.Element]:
    """Direct children named ``tag``, in document order."""
    return (child for child in element if child.tag == tag)


@dataclass
class ElementLines:
    """The line of each ``<tag>`` child of the root of a file read with ``encoding``,
    in document order; the file is scanned on the first :meth:`line` call."""

    path: Path
    encoding: str
    tag: str
    _lines: list[int] | None = field(default=None, init=False)

    def line(self, index: int) -> int | None:
        """The line of the ``index``-th (from 0) such child, or None past the last."""
        if self._lines is None:
            self._lines = self._scan()
        return self._lines[index] if index < len(self._lines) else None

    def _scan(self) -> list[int]:
        parser = expat.ParserCreate()
        lines: list[int] = []
        depth = 0

        def start(name: str, _attributes: dict[str, str]) -> None:
            nonlocal depth
            depth += 1
            if depth == 2 and name == self.tag:
                lines.append(parser.CurrentLineNumber)

        def end(_name: str) -> None:
            nonlocal depth
            depth -= 1

        parser.StartElementHandler = start
        parser.EndElementHandler = end
        data = self.path.read_bytes()
        parser.Parse(data if self.encoding == UTF8 else data.decode(self.encoding, "replace"), True)
        return lines

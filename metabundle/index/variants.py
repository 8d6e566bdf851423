"""Term variants mined from the corpus, and the alternative queries they make.

Two kinds, both taken from the documents of the release itself, none from a list we
wrote:

* **abbreviations** a document defines in so many words, "Forced expiratory volume in
  1-second (FEV1)", "Body mass index (BMI)": a parenthesized short form whose preceding
  words spell it (:func:`long_form`, the Schwartz–Hearst rule). A short form must be at
  least :data:`MIN_SHORT_FORM` characters with :data:`MIN_CAPITALS` capitals, not one of
  its own long form's words, and the long form must not be written in capitals only
  (in upper-case text, "(SECONDS)" after "SECONDS HELD IF LESS THAN 10" is a word, not an
  abbreviation). Each short form keeps its :data:`MAX_LONG_FORMS` most frequent long
  forms.
* **spellings**: two terms of the keyword vocabulary that one British/American rule
  (:data:`SPELLING_RULES`: anaemia/anemia, oesophagus/esophagus, tumour/tumor) turns
  into each other.

:meth:`TermVariants.alternatives` turns a query into at most :data:`MAX_ALTERNATIVES`
alternative term lists: a query holding every word of a long form ("forced expiratory
volume in one second") gets the short form in their place; a query writing a short form
with its capitals ("FEV1", "eGFR") gets the long form; a term with another spelling gets
it. The keyword index scores each alternative and keeps a document's best
(:meth:`~metabundle.index.fts.KeywordIndex.search`); an alternative's match counts
:data:`ALTERNATIVE_WEIGHT` of an equal match of the query's own words.

The build stores the variants twice, like the rest of the keyword index: the release
table ``fts_variant`` and ``fts/variants.json`` beside the keyword arrays.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from metabundle.index.tokenizer import tokenize

SHORT_FORM_RE = re.compile(r"\(\s*([A-Za-z][A-Za-z0-9&/+-]{1,14})\s*\)")
WORD_RE = re.compile(r"[\w'’-]+")
QUERY_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9&/+-]*")
MIN_SHORT_FORM = 3
MIN_CAPITALS = 2
MAX_LONG_FORMS = 2
MAX_ALTERNATIVES = 4
ALTERNATIVE_WEIGHT = 0.8
#: British → American spelling rules, applied to whole vocabulary terms.
SPELLING_RULES = (
    ("ae", "e"),
    ("oe", "e"),
    ("our", "or"),
    ("tre", "ter"),
    ("yse", "yze"),
    ("ise", "ize"),
    ("isat", "izat"),
)
MIN_SPELLING_LENGTH = 5
NUMBER_WORDS = {
    word: str(number)
    for number, word in enumerate(
        ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
        start=1,
    )
}
VARIANTS_FILE = "variants.json"
VARIANTS_FORMAT = "metabundle-variants-v1"
FTS_VARIANT_SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("form", pa.string()),
        ("variant", pa.string()),
        ("documents", pa.int32()),
    ]
)

# Each parenthesized short form of a title or body with up to twelve words before it,
# counted once per document.
CANDIDATES_SQL = r"""
WITH text AS (
    SELECT docno, unnest([title, body]) AS text FROM read_parquet(?)
    WHERE title LIKE '%(%' OR body LIKE '%(%'
),
hit AS (
    SELECT docno, unnest(regexp_extract_all(
        text, '((?:[^\s()]+\s+){1,12})\(\s*([A-Za-z][A-Za-z0-9&/+-]{1,14})\s*\)', 0
    )) AS hit
    FROM text
)
SELECT regexp_extract(hit, '\(\s*([A-Za-z][A-Za-z0-9&/+-]{1,14})\s*\)$', 1) AS short,
       regexp_extract(hit, '^(.*)\(', 1) AS preceding,
       count(DISTINCT docno)::INTEGER AS documents
FROM hit GROUP BY ALL ORDER BY short, preceding
"""


def long_form(short: str, preceding: str) -> str | None:
    """The words at the end of ``preceding`` that spell ``short`` (Schwartz–Hearst),
    or ``None``: the characters of ``short`` are found right to left, and its first
    one must begin a word."""
    letters = [c.lower() for c in short if c.isalnum()]
    words = WORD_RE.findall(preceding)[-min(len(letters) + 5, 2 * len(letters)) :]
    text = " ".join(words)
    position = len(text) - 1
    for index in range(len(letters) - 1, -1, -1):
        while position >= 0 and (
            text[position].lower() != letters[index]
            or (index == 0 and position > 0 and text[position - 1].isalnum())
        ):
            position -= 1
        if position < 0:
            return None
        position -= 1
    start = text.rfind(" ", 0, position + 1) + 1
    return text[start:].lstrip("-'’")


def core_terms(text: str) -> frozenset[str]:
    """The plain terms of ``text`` (no compound forms), number words as digits: what a
    query must hold to name a long form."""
    return frozenset(NUMBER_WORDS.get(t, t) for t in tokenize(text) if not _compound(t))


def _compound(term: str) -> bool:
    return any(c in term for c in "-/&+")


def _abbreviation(short: str, long: str) -> str | None:
    """The short form's one term when (``short``, ``long``) is a usable pair."""
    terms = tokenize(short)
    if len(short) < MIN_SHORT_FORM or sum(c.isupper() for c in short) < MIN_CAPITALS:
        return None
    if len(terms) != 1 or terms[0].isdigit() or long.upper() == long:
        return None
    core = core_terms(long)
    return terms[0] if len(core) >= 2 and terms[0] not in core else None


def mine_abbreviations(
    con: duckdb.DuckDBPyConnection, search_doc: Path
) -> list[tuple[str, str, int]]:
    """``(short form, long form, documents)`` defined by the documents of ``search_doc``
    (a parquet file with ``docno``, ``title`` and ``body``), best-supported first."""
    counts: dict[tuple[str, frozenset[str]], int] = defaultdict(int)
    spellings: dict[tuple[str, frozenset[str]], dict[tuple[str, str], int]] = defaultdict(dict)
    rows = con.execute(CANDIDATES_SQL, [str(search_doc)]).fetchall()
    for short, preceding, documents in rows:
        long = long_form(short, preceding)
        term = _abbreviation(short, long) if long else None
        if term is None or long is None:
            continue
        key = (term, core_terms(long))
        counts[key] += documents
        written = spellings[key]
        written[(short, long)] = written.get((short, long), 0) + documents
    # each pair as most of its documents write it
    spelled = {
        key: min(written, key=lambda s: (-written[s], s)) for key, written in spellings.items()
    }
    ranked = sorted(counts, key=lambda k: (-counts[k], spelled[k]))
    per_short: dict[str, int] = defaultdict(int)
    kept = []
    for key in ranked:
        if per_short[key[0]] < MAX_LONG_FORMS:
            per_short[key[0]] += 1
            kept.append((*spelled[key], counts[key]))
    return kept


def spelling_pairs(terms: Iterable[str]) -> list[tuple[str, str]]:
    """``(british, american)`` pairs of ``terms`` one :data:`SPELLING_RULES` rule joins."""
    vocabulary = set(terms)
    pairs = set()
    for term in vocabulary:
        if len(term) < MIN_SPELLING_LENGTH or not term.isalpha():
            continue
        for british, american in SPELLING_RULES:
            other = term.replace(british, american)
            if british in term and other != term and other in vocabulary:
                pairs.add((term, other))
    return sorted(pairs)


def variant_table(
    abbreviations: list[tuple[str, str, int]], spellings: list[tuple[str, str]]
) -> pa.Table:
    """The ``fts_variant`` rows, in (kind, form, variant) order."""
    rows = [("abbreviation", s, long, n) for s, long, n in abbreviations]
    rows += [("spelling", british, american, 0) for british, american in spellings]
    rows.sort()
    columns = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
    return pa.Table.from_arrays(
        [pa.array(list(c), f.type) for c, f in zip(columns, FTS_VARIANT_SCHEMA, strict=True)],
        schema=FTS_VARIANT_SCHEMA,
    )


def write_variants(table: pa.Table, directory: Path) -> None:
    """``variants.json`` of ``fts_variant`` rows, read by :meth:`TermVariants.open`."""
    payload = {"format": VARIANTS_FORMAT, "rows": [list(r.values()) for r in table.to_pylist()]}
    (Path(directory) / VARIANTS_FILE).write_text(json.dumps(payload, sort_keys=True) + "\n")


@dataclass(frozen=True)
class _Rewrite:
    core: frozenset[str]  # what a query must hold
    replacement: tuple[str, ...]  # the terms that take its place


@dataclass(frozen=True)
class _Abbreviation:
    core: frozenset[str]  # the long form's plain terms
    short: str  # the short form as the documents write it


class TermVariants:
    """The variants of one release, ready to expand queries."""

    def __init__(self, rows: Iterable[tuple[str, str, str, Any]]) -> None:
        self._by_smallest_term: dict[str, list[_Rewrite]] = defaultdict(list)
        self._by_short: dict[str, list[tuple[str, ...]]] = defaultdict(list)
        self._abbreviations: dict[str, list[_Abbreviation]] = defaultdict(list)  # by a term
        self._long_forms: dict[str, list[str]] = defaultdict(list)  # short term → as written
        for kind, form, variant, _documents in rows:
            if kind == "abbreviation":
                short = tokenize(form)[0]
                core = core_terms(variant)
                self._add(core, (short,))
                self._by_short[short].append(tuple(tokenize(variant)))
                if core:
                    self._abbreviations[min(core)].append(_Abbreviation(core, form))
                self._long_forms[short].append(variant)
            else:  # spelling: either stands for the other
                self._add(frozenset((form,)), (variant,))
                self._add(frozenset((variant,)), (form,))

    def _add(self, core: frozenset[str], replacement: tuple[str, ...]) -> None:
        if core:
            self._by_smallest_term[min(core)].append(_Rewrite(core, replacement))

    @classmethod
    def open(cls, directory: Path) -> TermVariants | None:
        """The variants saved in ``directory``, or ``None`` (a release built without)."""
        path = Path(directory) / VARIANTS_FILE
        if not path.exists():
            return None
        payload = json.loads(path.read_text())
        if payload.get("format") != VARIANTS_FORMAT:
            raise ValueError(f"{path} is not a {VARIANTS_FORMAT} file")
        return cls(tuple(row) for row in payload["rows"])

    def alternatives(self, query: str) -> list[list[str]]:
        """At most :data:`MAX_ALTERNATIVES` alternative term lists of ``query``."""
        terms = [NUMBER_WORDS.get(t, t) for t in tokenize(query)]
        present = set(terms)
        found: list[list[str]] = []
        for term in sorted(present):
            for rewrite in self._by_smallest_term.get(term, ()):
                if rewrite.core <= present and not set(rewrite.replacement) <= present:
                    kept = [t for t in terms if t not in rewrite.core]
                    found.append(kept + list(rewrite.replacement))
        for word in QUERY_WORD_RE.findall(query):
            short = tokenize(word)
            if sum(c.isupper() for c in word) < MIN_CAPITALS or len(short) != 1:
                continue
            for long in self._by_short.get(short[0], ()):
                found.append([t for t in terms if t != short[0]] + list(long))
        unique = {tuple(f): f for f in found if f}
        return list(unique.values())[:MAX_ALTERNATIVES]

    def alternative_texts(self, query: str) -> list[str]:
        """At most :data:`MAX_ALTERNATIVES` rewrites of the query's text by the
        abbreviations, for a model that reads text rather than terms: the words of a
        long form the query holds give way to its short form ("history of coronary
        artery bypass graft" → "history of CABG"), and a short form written with its
        capitals to its long form ("FEV1 at baseline" → "Forced expiratory volume in
        1-second at baseline")."""
        terms = {NUMBER_WORDS.get(t, t) for t in tokenize(query)}
        words = WORD_RE.findall(query)
        found: list[str] = []
        for term in sorted(terms):
            for abbreviation in self._abbreviations.get(term, ()):
                short = tokenize(abbreviation.short)[0]
                if abbreviation.core <= terms and short not in terms:
                    found.append(_replace_long_form(words, abbreviation))
        for word in QUERY_WORD_RE.findall(query):
            short = tokenize(word)
            if sum(c.isupper() for c in word) < MIN_CAPITALS or len(short) != 1:
                continue
            found += [
                _replace_short_form(words, word, long)
                for long in self._long_forms.get(short[0], ())
                if not core_terms(long) <= terms
            ]
        return [text for text in dict.fromkeys(found) if text][:MAX_ALTERNATIVES]


def _replace_short_form(words: list[str], short: str, long: str) -> str:
    """``words`` with ``short`` replaced by ``long`` and the other words that ``long``
    already says left out ("HDL cholesterol" → "high density lipoprotein cholesterol")."""
    said = core_terms(long)
    return " ".join(
        long if word == short else word
        for word in words
        if word == short or not (core := core_terms(word)) or not core <= said
    )


def _replace_long_form(words: list[str], abbreviation: _Abbreviation) -> str:
    """``words`` with the run from the first to the last word of the long form (stop
    words between them included) replaced by the short form."""
    inside = [
        i
        for i, word in enumerate(words)
        if (core := core_terms(word)) and core <= abbreviation.core
    ]
    first, last = inside[0], inside[-1]
    between = words[first : last + 1]
    if any(core_terms(w) and not core_terms(w) <= abbreviation.core for w in between):
        kept = [w for i, w in enumerate(words) if i not in set(inside)]
        return " ".join([*kept, abbreviation.short])
    return " ".join([*words[:first], abbreviation.short, *words[last + 1 :]])

"""The one tokenizer used to index documents and to parse keyword queries.

The same function runs on both sides, so a query term matches an indexed term
exactly when both came from equivalent surface text. The rules, in order:

1. **Fold.** Unicode NFKD decomposition, combining marks removed, then
   lower-casing: ``"Sjögren"`` → ``"sjogren"``, ``"ﬁbrosis"`` → ``"fibrosis"``.
   Texts that are pure ASCII skip the Unicode work (same result, faster).
2. **Split into surface forms.** The folded text is split on the regular
   expression :data:`SPLIT_PATTERN` (``[^a-z0-9._-]+``) and each piece is
   trimmed of leading and trailing ``.``, ``_`` and ``-`` (so the sentence-final
   period in ``"... of K92.2."`` does not stick to the code). Characters that
   fold to nothing in ``a-z0-9`` (Greek, CJK, ``ø``, ``ß`` …) act as separators.
   This rule is deliberately reproducible in SQL as
   ``trim(unnest(regexp_split_to_array(lower(strip_accents(q)), '[^a-z0-9._-]+')), '._-')``;
   see :func:`metabundle.index.fts.bm25_macro_sql`.
3. **Forms to terms** (:func:`form_terms`):

   * a plain alphabetic form (``[a-z]+``) is dropped when it is one character
     long or an English stop word (:data:`STOP_WORDS`), otherwise stemmed with
     the Snowball English (Porter2) stemmer from PyStemmer: ``smoking`` →
     ``smoke``;
   * an alphanumeric form with digits and no separator (``21001``,
     ``p21001``, ``phs000179``) is kept verbatim, never stemmed;
   * a form containing ``.``, ``_`` or ``-`` (a code, an identifier, a hyphenated
     word) yields the whole form verbatim **and** each of its parts split on
     ``[._-]+``, each part treated by the two rules above, duplicates removed:
     ``phs000179.v3.p1`` → ``phs000179.v3.p1``, ``phs000179``, ``v3``, ``p1``;
     ``k92.2`` → ``k92.2``, ``k92``, ``2``; ``smoking_100cigslifetime`` →
     ``smoking_100cigslifetime``, ``smoke``, ``100cigslifetime``; ``covid-19`` →
     ``covid-19``, ``covid``, ``19``; ``f.21001.0.0`` → ``f.21001.0.0``,
     ``21001``, ``0``. So a query for ``phs000179`` finds ``phs000179.v3.p1``,
     and a query for the full code ranks the exact code first (more terms match).

   Stop words are tested on the folded surface word *before* stemming (as
   Lucene's ``StopFilter`` runs before its stemmer) and removed on both the
   index and the query side; a stop word inside a compound form survives only
   as part of the compound's whole term.

Every term is therefore ASCII in ``[a-z0-9._-]``. Tokens keep their order;
repeated words give repeated terms (term frequency).

**SQL agreement.** DuckDB's ``strip_accents`` applies canonical (NFD)
decomposition only; it was checked on every code point below U+30000 that the
NFD variant of rule 1 followed by the split of rule 2 gives exactly DuckDB's
``lower(strip_accents(…))`` split. Rule 1 uses NFKD (compatibility) instead, so
only query text containing compatibility characters (ligatures such as ``ﬁ``,
super/subscripts such as ``²``, full-width letters, ``ſ`` …) tokenizes
differently in the SQL macro than here; indexed text always goes through this
module.

Public API: :func:`fold`, :func:`split_forms`, :func:`form_terms`,
:func:`forms_terms`, :func:`tokenize`, :func:`tokenize_many`,
:func:`surface_forms`, :data:`STOP_WORDS`, :data:`SPLIT_PATTERN`, :data:`TRIM_CHARS`.

Performance: stems and the terms of each raw word are cached in module-wide
dicts (bounded: cleared past two million entries); stems are computed in
batches with ``Stemmer.stemWords``; :func:`tokenize_many` resolves each
distinct word of a batch once and assembles each text from that table.
The PyStemmer object is not thread-safe, so each thread gets its own instance;
the caches only ever hold deterministic values.
"""

from __future__ import annotations

import gc
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager

import Stemmer

__all__ = [
    "SPLIT_PATTERN",
    "STOP_WORDS",
    "TRIM_CHARS",
    "fold",
    "form_terms",
    "forms_terms",
    "split_forms",
    "surface_forms",
    "tokenize",
    "tokenize_many",
]

#: Separators between surface forms, applied to folded text (Python ``re`` and
#: DuckDB's RE2 read it the same way).
SPLIT_PATTERN = r"[^a-z0-9._-]+"

#: Characters trimmed from both ends of each surface form.
TRIM_CHARS = "._-"

#: English stop words: exactly the default stop set of Lucene's ``EnglishAnalyzer``
#: (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``, 33 function words). It is short on
#: purpose: metadata titles are terse, so only words that carry no meaning in any
#: biomedical field label are dropped. Removed on both the index and query side.
STOP_WORDS: frozenset[str] = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
        "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
        "their", "then", "there", "these", "they", "this", "to", "was", "will",
        "with",
    }
)  # fmt: skip

_FORM_RE = re.compile(r"[a-z0-9._-]+")
_PART_SPLIT_RE = re.compile(r"[._-]+")
_WORD_RE = re.compile(r"[a-z]+")
_ALNUM_RE = re.compile(r"[a-z0-9]+")

#: Upper bound on cached entries; the caches are cleared when they outgrow it.
_CACHE_LIMIT = 2_000_000

_stem_cache: dict[str, str] = {}
_terms_cache: dict[str, tuple[str, ...]] = {}
_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    """Return this thread's English stemmer (PyStemmer objects are not thread-safe)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = Stemmer.Stemmer("english")
        stemmer.maxCacheSize = 0  # we keep our own shared cache
        _local.stemmer = stemmer
    return stemmer


def fold(text: str) -> str:
    """Fold ``text``: NFKD, drop combining marks, lower-case."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return stripped.lower()


def split_forms(folded: str) -> list[str]:
    """Split already folded text into trimmed, non-empty surface forms."""
    forms = []
    for raw in _FORM_RE.findall(folded):
        form = raw.strip(TRIM_CHARS)
        if form:
            forms.append(form)
    return forms


def _stem_all(words: Iterable[str]) -> None:
    """Make sure every word in ``words`` has an entry in the stem cache."""
    missing = [w for w in set(words) if w not in _stem_cache]
    if not missing:
        return
    if len(_stem_cache) + len(missing) > _CACHE_LIMIT:
        _stem_cache.clear()
    for word, stem in zip(missing, _stemmer().stemWords(missing), strict=True):
        _stem_cache[word] = stem


def _is_plain_word(form: str) -> bool:
    return _WORD_RE.fullmatch(form) is not None


def _word_candidates(forms: Iterable[str]) -> list[str]:
    """Plain words (whole forms or parts of compounds) that need a stem."""
    words: list[str] = []
    for form in forms:
        pieces = [form] if _ALNUM_RE.fullmatch(form) else _PART_SPLIT_RE.split(form)
        words.extend(p for p in pieces if len(p) > 1 and p not in STOP_WORDS and _is_plain_word(p))
    return words


def _piece_term(piece: str) -> str | None:
    """The term for one separator-free piece, or None when it is dropped."""
    if not piece:
        return None
    if _is_plain_word(piece):
        if len(piece) == 1 or piece in STOP_WORDS:
            return None
        stem = _stem_cache.get(piece)
        if stem is None:
            stem = _stemmer().stemWord(piece)
            _stem_cache[piece] = stem
        return stem
    return piece  # contains digits: kept verbatim


def _compute_form_terms(form: str) -> tuple[str, ...]:
    if _ALNUM_RE.fullmatch(form):
        term = _piece_term(form)
        return () if term is None else (term,)
    terms = [form]
    for part in _PART_SPLIT_RE.split(form):
        term = _piece_term(part)
        if term is not None and term not in terms:
            terms.append(term)
    return tuple(terms)


def _chunk_terms(chunk: str) -> tuple[str, ...]:
    """Terms for one raw regex match (trimmed here); cached by the raw text."""
    terms = _terms_cache.get(chunk)
    if terms is None:
        form = chunk.strip(TRIM_CHARS)
        terms = _compute_form_terms(form) if form else ()
        if len(_terms_cache) >= _CACHE_LIMIT:
            _terms_cache.clear()
        _terms_cache[chunk] = terms
    return terms


def form_terms(form: str) -> tuple[str, ...]:
    """Terms for one trimmed surface form (see the module docstring, rule 3)."""
    return _chunk_terms(form)


def _resolve(chunks: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Terms of many distinct raw chunks, stemming all their new words in one batch."""
    chunks = list(chunks)
    new = [c.strip(TRIM_CHARS) for c in chunks if c not in _terms_cache]
    _stem_all(_word_candidates(f for f in new if f))
    return {c: _chunk_terms(c) for c in chunks}


def forms_terms(forms: Sequence[str]) -> list[tuple[str, ...]]:
    """Terms for many distinct forms at once, stemming their words in one batch."""
    terms_of = _resolve(forms)
    return [terms_of[f] for f in forms]


def tokenize(text: str | None) -> list[str]:
    """Index/query terms of ``text`` in order (``None`` and ``""`` give ``[]``)."""
    if not text:
        return []
    return [term for chunk in _FORM_RE.findall(fold(text)) for term in _chunk_terms(chunk)]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building millions of acyclic lists.

    Lists of strings cannot form reference cycles, yet each allocation burst
    triggers collections that rescan every live list: half the run time of
    :func:`tokenize_many` on a million texts. The previous state is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def tokenize_many(texts: Iterable[str | None]) -> list[list[str]]:
    """:func:`tokenize` for many texts, resolving each distinct word once.

    All texts are split first; the distinct words of the batch are then
    tokenized together (one ``stemWords`` call for the new ones), and each
    text's terms are assembled from that table.
    """
    findall = _FORM_RE.findall
    with _gc_paused():
        chunks = [findall(fold(t)) if t else [] for t in texts]
        lookup = _resolve(set().union(*chunks))
        return [[term for chunk in row for term in lookup[chunk]] for row in chunks]


def surface_forms(text: str | None) -> list[tuple[str, str]]:
    """``(surface form, term)`` pairs of ``text``, one per emitted term, in order.

    The surface form is the folded, split and trimmed word exactly as the SQL
    macro derives it from a query; a form that yields no term (stop word,
    single letter) does not appear.
    """
    if not text:
        return []
    return [(form, term) for form in split_forms(fold(text)) for term in form_terms(form)]

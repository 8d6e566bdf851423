"""A synthetic corpus of biomedical metadata drawn from the mirror's real vocabulary.

Words are drawn with their observed frequencies from the UK Biobank field titles and
notes and the dbGaP data-dictionary descriptions of the upstream mirror (read at run
time, never stored), plus identifier-like tokens (dbGaP accessions, UKB field columns,
ICD-10 and LOINC-like codes). A fixed seed makes the corpus and queries reproducible.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa

from benchmarks.common import REPO, SEED
from metabundle.index.tokenizer import tokenize

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+|[0-9]+")
_DESCRIPTION = re.compile(r"<description>([^<]*)</description>")

FALLBACK_TEXT = (
    "blood pressure systolic diastolic heart rate smoking status alcohol intake "
    "body mass index weight height waist hip circumference glucose cholesterol "
    "triglycerides diabetes hypertension asthma cancer diagnosis medication "
    "participant visit assessment centre questionnaire age sex ethnicity "
    "education income sleep duration physical activity diet fruit vegetable "
    "coffee tea frequency ever never current former pack years cigarettes "
    "hospital inpatient record date onset family history mother father sibling"
)


def upstream_dir() -> Path:
    """``METABUNDLE_UPSTREAM_DIR`` or ``../shared/upstream`` next to the checkout."""
    value = os.environ.get("METABUNDLE_UPSTREAM_DIR")
    return Path(value) if value else REPO.parent / "shared" / "upstream"


def _upstream_texts(limit_files: int = 600) -> list[str]:
    """Titles, notes and descriptions from the local upstream mirror, if any."""
    upstream = upstream_dir()
    texts: list[str] = []
    fields = upstream / "ukb" / "scdown" / "1.txt"
    if fields.exists():
        lines = fields.read_text(encoding="utf-8").splitlines()
        header = lines[0].split("\t")
        title, notes = header.index("title"), header.index("notes")
        for line in lines[1:]:
            cols = line.split("\t")
            texts.extend(cols[i] for i in (title, notes) if i < len(cols))
    dicts = sorted((upstream / "dbgap" / "studies").glob("*/*/pheno_variable_summaries/*.xml"))
    for path in dicts[:limit_files]:
        texts.extend(_DESCRIPTION.findall(path.read_text(encoding="utf-8", errors="ignore")))
    return texts


@lru_cache(maxsize=1)
def vocabulary() -> tuple[list[str], np.ndarray, bool]:
    """Words, their sampling probabilities (observed frequencies) and whether they came
    from the mirror (False: a small built-in fallback list)."""
    counts: Counter[str] = Counter()
    for text in _upstream_texts():
        counts.update(_WORD.findall(text))
    real = len(counts) >= 1000
    if not real:
        counts = Counter({w: 1 + i % 7 for i, w in enumerate(FALLBACK_TEXT.split())})
    words = sorted(counts)
    freq = np.array([counts[w] for w in words], dtype=np.float64)
    return words, freq / freq.sum(), real


def _codes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Identifier-like tokens: dbGaP accessions, UKB field ids, ICD-10, LOINC."""
    kind = rng.integers(0, 4, n)
    num = rng.integers(1, 3000, n)
    out = np.empty(n, dtype=object)
    for i in range(n):
        k, x = kind[i], num[i]
        out[i] = (
            f"phs{x:06d}.v{x % 9 + 1}.p1",
            f"f.{20000 + x}.0.0",
            f"K{x % 99:02d}.{x % 10}",
            f"{x}-{x % 10}",
        )[k]
    return out


def make_corpus(n_docs: int, seed: int = SEED) -> pa.Table:
    """A reproducible corpus of ``n_docs`` short titles and bodies (``docno`` 0..n-1)."""
    rng = np.random.default_rng(seed)
    words, prob, _ = vocabulary()
    words_arr = np.array(words, dtype=object)
    title_len = rng.integers(2, 8, n_docs)
    body_len = rng.integers(5, 20, n_docs)
    title_words = words_arr[rng.choice(len(words), int(title_len.sum()), p=prob)]
    body_words = words_arr[rng.choice(len(words), int(body_len.sum()), p=prob)]
    codes = _codes(rng, n_docs)
    has_code = rng.random(n_docs) < 0.3
    titles, bodies = [], []
    t_pos = b_pos = 0
    for i in range(n_docs):
        t_end, b_end = t_pos + title_len[i], b_pos + body_len[i]
        titles.append(" ".join(title_words[t_pos:t_end]))
        body = " ".join(body_words[b_pos:b_end])
        bodies.append(f"{body} {codes[i]}." if has_code[i] else body)
        t_pos, b_pos = t_end, b_end
    return pa.table(
        {
            "docno": pa.array(np.arange(n_docs, dtype=np.int32)),
            "title": pa.array(titles, pa.string()),
            "body": pa.array(bodies, pa.string()),
        }
    )


def make_queries(corpus: pa.Table, n_queries: int, seed: int = SEED + 1) -> list[str]:
    """1-4 words each, picked from random documents (so they occur)."""
    rng = np.random.default_rng(seed)
    titles = corpus["title"].to_pylist()
    bodies = corpus["body"].to_pylist()
    queries: list[str] = []
    while len(queries) < n_queries:
        doc = int(rng.integers(0, len(titles)))
        pool = f"{titles[doc]} {bodies[doc]}".split()
        n = int(rng.integers(1, 5))
        picks = rng.choice(len(pool), size=min(n, len(pool)), replace=False)
        query = " ".join(pool[i].rstrip(".") for i in sorted(picks))
        if tokenize(query):  # all stop words: nothing to compare
            queries.append(query)
    return queries

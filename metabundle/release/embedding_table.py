"""The release's ``embedding`` table, written from its vector file.

One row per search document: its ids, the model, and its vector as the release stores
it (``ann/vectors.npy``, float16) in float32, so exact cosine over the table gives the
scores serving re-scores with and an ANN index rebuilt from it is the build's. Written
by the release writer rather than staged by the embedding step: a float32 copy in the
build cache was another kilobyte a document (9 GB at ten million), beside the cache of
vectors by text and the float16 file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from metabundle.errors import ReleaseError
from metabundle.index.vector_file import VECTORS_FILE, VectorFile

#: Rows read from the vector file and written to the table at a time.
BLOCK_ROWS = 131_072


def write_embedding_rows(
    files: Mapping[str, Path], search_doc: Path, info: Mapping[str, Any], destination: Path
) -> Path | None:
    """Write the ``embedding`` rows (``docno``, ``doc_id``, ``model``, ``vector``) of
    every document of ``search_doc`` (in docno order, row ``i`` of the vector file
    being docno ``i``) to the Parquet file ``destination``, a block of rows at a time,
    from the search steps' vector file among ``files`` and the model their facts
    ``info`` name; None (and nothing written) for a release without vectors."""
    if VECTORS_FILE not in files:
        return None
    vectors_path = Path(files[VECTORS_FILE])
    model_id = str(info["embedding_model"])
    ids = pq.read_table(search_doc, columns=["docno", "doc_id"])
    vectors = VectorFile(vectors_path)
    try:
        if len(vectors) != ids.num_rows:
            raise ReleaseError(
                f"{vectors_path.name} holds {len(vectors):,} vectors for "
                f"{ids.num_rows:,} search documents; rebuild the embeddings step."
            )
        dimension = vectors.shape[1]
        schema = pa.schema(
            [
                ("docno", ids.schema.field("docno").type),
                ("doc_id", pa.string()),
                ("model", pa.string()),
                ("vector", pa.list_(pa.float32(), dimension)),
            ]
        )
        with pq.ParquetWriter(destination, schema, compression="none") as writer:
            for start in range(0, ids.num_rows, BLOCK_ROWS):
                block = ids.slice(start, BLOCK_ROWS)
                rows = vectors[start : start + block.num_rows].astype(np.float32)
                writer.write_table(
                    pa.table(
                        {
                            "docno": block.column("docno"),
                            "doc_id": block.column("doc_id"),
                            "model": pa.array([model_id] * block.num_rows, pa.string()),
                            "vector": pa.FixedSizeListArray.from_arrays(
                                pa.array(rows.reshape(-1)), dimension
                            ),
                        },
                        schema=schema,
                    )
                )
    finally:
        vectors.close()
    return destination

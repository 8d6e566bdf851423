"""A release's vectors read by rows: the same rows as the matrix, nothing left resident."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import numpy as np
import pytest

from metabundle.index.ann import build_ann_index, filtered_search, open_ann_index, save_vectors
from metabundle.index.vector_file import (
    CALIBRATION_READS,
    CALIBRATION_ROWS,
    VectorFile,
    create_rows,
)


@pytest.fixture(params=["map", "pread", None])
def matrix(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[np.ndarray, VectorFile]:
    """The stored matrix and its file, read by map, by ``preadv``, or by whichever of
    the two the file finds faster (``None``)."""
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((5000, 48)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    save_vectors(vectors, tmp_path / "vectors.npy", dtype="float16")
    stored = np.load(tmp_path / "vectors.npy")
    file = VectorFile(tmp_path / "vectors.npy", reader=request.param)
    yield stored, file
    file.close()


def test_rows_are_the_matrix_rows_in_the_order_asked(matrix) -> None:
    stored, file = matrix
    rng = np.random.default_rng(1)
    scattered = rng.choice(len(stored), 700, replace=False)  # unsorted, far apart
    repeated = np.array([4999, 3, 3, 4, 5, 6, 4999, 0])  # repeats, neighbours, both ends
    grid = np.array([[10, 2], [2, 10]])
    assert file.shape == stored.shape and file.dtype == stored.dtype and len(file) == 5000
    for rows in (scattered, repeated, grid, np.arange(5000), np.empty(0, np.int64)):
        assert np.array_equal(file[rows], stored[rows])
    assert np.array_equal(file[17], stored[17])
    for block in (slice(10, 20), slice(4990, 6000), slice(None), slice(7, 7)):
        assert np.array_equal(file[block], stored[block])
    assert np.array_equal(np.asarray(file, dtype=np.float32), stored.astype(np.float32))


def test_a_row_outside_the_file_or_not_a_row_number_is_refused(matrix) -> None:
    _, file = matrix
    with pytest.raises(IndexError, match=r"outside 0\.\.4999"):
        file[np.array([1, 5000])]
    with pytest.raises(IndexError):
        file[-1]
    with pytest.raises(TypeError, match="integer row numbers"):
        file[np.array([0.5])]


def test_filtered_search_finds_the_same_neighbours_from_the_file(matrix, tmp_path) -> None:
    stored, file = matrix
    build_ann_index(
        stored.astype(np.float32), np.arange(len(stored)), tmp_path / "v.bitscan", "bitscan"
    )
    index = open_ann_index(tmp_path / "v.bitscan")
    query = stored[42].astype(np.float32)
    allowed = np.arange(0, 5000, 3)
    for keys in (None, allowed):
        from_matrix = filtered_search(index, stored, query, 10, keys)
        from_file = filtered_search(index, file, query, 10, keys)
        assert np.array_equal(from_matrix[0], from_file[0])
        assert np.array_equal(from_matrix[1], from_file[1])


def test_a_file_times_both_readers_then_keeps_one(tmp_path) -> None:
    vectors = np.random.default_rng(6).standard_normal((5000, 48)).astype(np.float16)
    np.save(tmp_path / "v.npy", vectors)
    file = VectorFile(tmp_path / "v.npy")
    rng = np.random.default_rng(5)
    for _ in range(CALIBRATION_READS * 2):  # too few rows to time: they choose nothing
        rows = rng.choice(len(vectors), CALIBRATION_ROWS - 1, replace=False)
        assert np.array_equal(file[rows], vectors[rows])
    assert file.reader is None
    for _ in range(CALIBRATION_READS):
        rows = rng.choice(len(vectors), 500, replace=False)
        assert np.array_equal(file[rows], vectors[rows])
    kept = file.reader
    assert kept in ("map", "pread")
    rows = rng.choice(len(vectors), 500, replace=False)
    assert np.array_equal(file[rows], vectors[rows]) and file.reader == kept
    file.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
@pytest.mark.parametrize("reader", ["map", "pread"])
def test_reading_scattered_rows_leaves_none_of_the_file_resident(tmp_path, reader) -> None:
    """Through a plain memory map scattered reads leave megabytes of the file resident
    in the process; read through a :class:`VectorFile`, by either reader, nothing of it
    is."""
    vectors = np.random.default_rng(3).standard_normal((200_000, 64)).astype(np.float16)
    np.save(tmp_path / "big.npy", vectors)  # 25 MB
    rows = np.random.default_rng(4).choice(len(vectors), 2000, replace=False)
    file = VectorFile(tmp_path / "big.npy", reader=reader)
    assert np.array_equal(file[rows], vectors[rows])
    assert _resident_kb(tmp_path / "big.npy") == 0
    mapped = np.load(tmp_path / "big.npy", mmap_mode="r")
    assert np.array_equal(mapped[rows], vectors[rows])
    assert _resident_kb(tmp_path / "big.npy") > 4096  # what the map's reads left: MBs
    file.close()


def _resident_kb(path: Path) -> int:
    """This process's resident KB of mappings of ``path``."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if not fields[0].endswith(":"):
            inside = len(fields) >= 6 and fields[5] == str(path)
        elif inside and fields[0] == "Rss:":
            total += int(fields[1])
    return total


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_a_closed_file_refuses_reads_and_no_file_keeps_its_map(tmp_path) -> None:
    np.save(tmp_path / "v.npy", np.ones((4, 8), np.float16))
    closed, dropped = VectorFile(tmp_path / "v.npy"), VectorFile(tmp_path / "v.npy")
    assert _maps_of(tmp_path / "v.npy") == 2
    held = _descriptors_of(tmp_path / "v.npy")  # each file's own and its map's
    closed.close()
    with pytest.raises(ValueError, match=r"v\.npy is closed"):
        closed[0]
    assert _descriptors_of(tmp_path / "v.npy") == held // 2
    del dropped  # nobody closes it
    gc.collect()
    assert _maps_of(tmp_path / "v.npy") == 0 and _descriptors_of(tmp_path / "v.npy") == 0


def _descriptors_of(path: Path) -> int:
    """This process's open descriptors of ``path``."""
    links = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            links.append(fd.readlink())
        except OSError:  # the descriptor of the listing itself, closed by now
            continue
    return sum(link == path for link in links)


def _maps_of(path: Path) -> int:
    """This process's mappings of ``path``."""
    lines = Path("/proc/self/maps").read_text().splitlines()
    return sum(line.endswith(" " + str(path)) for line in lines)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_a_matrix_written_through_a_map_is_kept_once_its_pages_are_let_go(tmp_path) -> None:
    """What a build writes through :func:`create_rows` stays in the file, not in the
    process, once the map lets its pages go."""
    vectors = np.random.default_rng(5).standard_normal((100_000, 64)).astype(np.float32)
    mapped, rows = create_rows(tmp_path / "out.npy", vectors.shape, np.float32)
    rows[::-1] = vectors[::-1]  # scattered writes, as a cache hands back its parts
    assert _resident_kb(tmp_path / "out.npy") > 4096
    mapped.let_go()
    assert _resident_kb(tmp_path / "out.npy") == 0
    del rows
    mapped.close()
    assert np.array_equal(np.load(tmp_path / "out.npy"), vectors)

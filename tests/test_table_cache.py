"""filters.text.table_cache: per-code-point tables read back from disk equal the ones built, a second
process reads instead of building, and a damaged or foreign file is built again."""

from __future__ import annotations

import numpy as np
import pytest

from filters.text import table_cache as tc


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(tc.ENV_DIR, str(tmp_path))
    monkeypatch.delenv(tc.ENV_OFF, raising=False)
    return tmp_path / "tables"


def _counting(name: str, value):
    calls = []

    @tc.disk_cached(name)
    def build():
        calls.append(1)
        return value

    return build, calls


def test_read_back_equals_built_and_skips_the_build(cache):
    single = np.arange(1000, dtype=np.uint32) * 7
    build, calls = _counting("single", single)
    assert np.array_equal(build(), single) and len(calls) == 1
    got = build()  # a new process would find the same file: only the read
    assert len(calls) == 1
    assert got.dtype == single.dtype and np.array_equal(got, single)
    assert [p.name.split("-")[0] for p in cache.iterdir()] == ["single"]

    many = (np.zeros(5, np.uint8), np.ones((2, 3), np.int64), np.array([0.5], np.float32))
    build2, calls2 = _counting("many", many)
    build2()
    got2 = build2()
    assert len(calls2) == 1 and isinstance(got2, tuple) and len(got2) == 3
    assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(got2, many))


def test_a_damaged_file_is_built_again(cache):
    value = np.arange(50, dtype=np.int64)
    build, calls = _counting("t", value)
    build()
    (path,) = cache.iterdir()
    path.write_bytes(path.read_bytes()[:40])  # a process killed mid-write leaves no such file; a disk may
    assert np.array_equal(build(), value) and len(calls) == 2
    assert np.array_equal(build(), value) and len(calls) == 2  # and written whole again


def test_off_and_unwritable(cache, tmp_path, monkeypatch):
    value = np.arange(3)
    build, calls = _counting("t", value)
    monkeypatch.setenv(tc.ENV_OFF, "0")
    build(), build()
    assert len(calls) == 2 and not cache.exists()
    monkeypatch.delenv(tc.ENV_OFF)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv(tc.ENV_DIR, str(blocker))  # tables/ cannot be made under a file
    assert np.array_equal(build(), value) and np.array_equal(build(), value)
    assert len(calls) == 4


def test_the_key_follows_the_package_and_python(cache):
    key = tc.fingerprint()
    assert key and len(key) == 24
    build, _ = _counting("k", np.arange(2))
    build()
    assert [p.name for p in cache.iterdir()] == [f"k-{key}.npz"]


def test_the_real_tables_equal_a_fresh_build(cache):
    """Each table the package caches, read from disk, equals the same builder run without the cache."""
    from filters import docpass
    from filters.quality import signals
    from filters.quality.fluency import normalise
    from filters.text import chars

    for cached in (chars.char_table, signals.char_table, normalise._fold_table):
        built = cached.__wrapped__.__wrapped__()  # lru_cache over disk_cached over the builder
        cached.__wrapped__()  # written
        read = cached.__wrapped__()  # read back
        assert read.dtype == built.dtype and np.array_equal(read, built)
    built = docpass._word_classes.__wrapped__()
    docpass._word_classes()
    assert np.array_equal(docpass._word_classes(), built)
    built4 = normalise.nfkc_lower_tables.__wrapped__.__wrapped__()
    normalise.nfkc_lower_tables.__wrapped__()
    read4 = normalise.nfkc_lower_tables.__wrapped__()
    assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(read4, built4))
    assert len(list(cache.iterdir())) == 5

"""Model directories shipped to executors: a changed file, any file, is a new archive."""

from __future__ import annotations

import zipfile
from types import SimpleNamespace

from etl.runtime.ship import ship_directory


def test_a_changed_metadata_file_ships_a_new_archive(tmp_path):
    added = []
    spark = SimpleNamespace(sparkContext=SimpleNamespace(addArchive=added.append))
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.bin").write_bytes(b"weights")
    (model / "metadata.json").write_text('{"threshold": 0.35}')
    first = ship_directory(spark, model, "zhcorpus-spam-abc")
    assert ship_directory(spark, model, "zhcorpus-spam-abc") == first  # same content, same name
    (model / "metadata.json").write_text('{"threshold": 0.37}')  # retrained threshold, same model.bin
    second = ship_directory(spark, model, "zhcorpus-spam-abc")
    assert second != first and second.startswith("zhcorpus-spam-abc-")
    archive = added[-1].split("#")[0]
    assert added[-1].endswith(f"#{second}")
    with zipfile.ZipFile(archive) as z:
        assert z.read("metadata.json") == b'{"threshold": 0.37}'

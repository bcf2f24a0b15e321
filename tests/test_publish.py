"""etl.runtime.publish: a publish killed at any step leaves the old or the new version, never neither."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from etl.runtime import publish
from etl.runtime.failpoints import ENV

ROOT = Path(__file__).resolve().parent.parent
STEPS = ["publish:staged", "publish:exchanged", "publish:retired", "publish:renamed"]

# Publishes version "new" over DEST; NO_EXCHANGE makes local storage behave like HDFS (no swap).
SCRIPT = """
import sys
from etl.runtime import publish
storage = publish.LocalStorage()
if sys.argv[2] == "1":
    storage.exchange = lambda a, b: False
with publish.publish_dir(sys.argv[1], overwrite=True, storage=storage) as st:
    st.write_text("a.txt", "new a")
    st.storage.mkdirs(st.path("part"))
    st.write_text("part/b.txt", "new b")
"""


def _version(dest: Path) -> str | None:
    """'old' or 'new' when ``dest`` holds exactly one complete version, else None."""
    if not dest.is_dir():
        return None
    a, b = (dest / "a.txt").read_text(), (dest / "part" / "b.txt").read_text()
    return a.split()[0] if a.split()[0] == b.split()[0] else None


def _old(dest: Path) -> None:
    (dest / "part").mkdir(parents=True)
    (dest / "a.txt").write_text("old a")
    (dest / "part" / "b.txt").write_text("old b")


def _publish_killed_at(dest: Path, step: str, no_exchange: bool) -> int:
    env = {**os.environ, ENV: step, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(dest), "1" if no_exchange else "0"], env=env, cwd=ROOT
    ).returncode


@pytest.mark.parametrize("no_exchange", [False, True], ids=["exchange", "rename-aside"])
@pytest.mark.parametrize("step", STEPS)
def test_a_killed_publish_leaves_old_or_new(tmp_path, step, no_exchange):
    dest = tmp_path / "corpus"
    _old(dest)
    rc = _publish_killed_at(dest, step, no_exchange)
    reached = {
        "publish:staged": True,
        "publish:exchanged": not no_exchange,
        "publish:retired": no_exchange,
        "publish:renamed": no_exchange,
    }[step]
    assert rc == (-9 if reached else 0)
    expected = "old" if step == "publish:staged" or (step == "publish:retired" and no_exchange) else "new"
    if not (no_exchange and step == "publish:retired"):
        assert _version(dest) == expected  # no window at all: the old, or the new one whole
    publish.recover(str(dest), publish.LocalStorage())  # what every later publish does first
    assert _version(dest) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus"]  # leftovers removed


def test_an_exception_keeps_the_old_version_and_cleans_up(tmp_path):
    dest = tmp_path / "corpus"
    _old(dest)
    with pytest.raises(RuntimeError):
        with publish.publish_dir(str(dest), overwrite=True) as st:
            st.write_text("a.txt", "new a")
            raise RuntimeError("stage failed")
    assert _version(dest) == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus"]


def test_an_existing_output_needs_overwrite(tmp_path):
    dest = tmp_path / "corpus"
    _old(dest)
    with pytest.raises(publish.OutputExists, match="--overwrite"):
        with publish.publish_dir(str(dest)):
            pass
    assert _version(dest) == "old"


def test_write_atomic_replaces_whole(tmp_path):
    path = tmp_path / "state.json"
    publish.write_atomic(path, json.dumps({"v": 1}))
    publish.write_atomic(f"file:{path}", json.dumps({"v": 2}))
    assert json.loads(path.read_text()) == {"v": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


@pytest.mark.slow
def test_hadoop_storage_publishes_and_recovers(spark, tmp_path):
    storage = publish.HadoopStorage(spark)
    dest = tmp_path / "corpus"
    _old(dest)
    with publish.publish_dir(f"file:{dest}", overwrite=True, storage=storage) as st:
        st.write_text("a.txt", "new a")
        st.storage.mkdirs(st.path("part"))
        st.write_text("part/b.txt", "new b")
    assert _version(dest) == "new"
    # a crash between "renamed aside" and "renamed in": recover brings the retired tree back
    os.rename(dest, tmp_path / f"corpus{publish.RETIRED}abc")
    publish.recover(storage.qualify(f"file:{dest}"), storage)
    assert _version(dest) == "new"
    publish.write_atomic(f"file:{tmp_path}/state.json", "x", storage)
    publish.write_atomic(f"file:{tmp_path}/state.json", "y", storage)
    assert (tmp_path / "state.json").read_text() == "y"

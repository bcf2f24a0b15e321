"""etl.runtime.spark: a local job's JVM runs C1 alone for small local inputs (SparkConfig.jit), and the
option reaches the JVM a session starts."""

from __future__ import annotations

import subprocess
import sys

import pytest

from etl.runtime.spark import C1_ONLY, SparkConfig, java_options, local_bytes
from tests.cluster_fixture import ROOT


def test_the_choice_follows_the_setting_and_the_input_size():
    auto = SparkConfig()
    mb = 1 << 20
    assert java_options(auto, 0) == C1_ONLY and java_options(auto, 63 * mb) == C1_ONLY
    assert java_options(auto, 64 * mb) == "" and java_options(auto, 10 << 30) == ""
    assert java_options(auto, None) == ""  # a store, or a path not there: the tiered default
    assert java_options(SparkConfig(jit="c1"), None) == C1_ONLY
    assert java_options(SparkConfig(jit="tiered"), 0) == ""
    assert java_options(SparkConfig(jit_c1_below_mb=1), 2 * mb) == ""
    with pytest.raises(ValueError, match="spark.jit"):
        SparkConfig(jit="c2")


def test_local_bytes_counts_what_the_readers_read(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b"x" * 100)
    sub = tmp_path / "warc"
    sub.mkdir()
    (sub / "b.warc.gz").write_bytes(b"y" * 30)
    (sub / "_SUCCESS").write_bytes(b"z" * 7)  # left out, as the readers leave it
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c").write_bytes(b"w" * 50)
    assert local_bytes([str(tmp_path)]) == 130
    assert local_bytes([str(tmp_path / "a.jsonl"), f"file://{sub}"]) == 130
    assert local_bytes([]) == 0
    assert local_bytes([str(tmp_path), "s3://bucket/crawl/"]) is None
    assert local_bytes([str(tmp_path / "missing")]) is None
    # large enough at the first path: the rest is not looked at
    assert local_bytes([str(tmp_path / "a.jsonl"), "s3://bucket/crawl/"], stop_at=100) == 100


@pytest.mark.slow
def test_a_small_local_job_starts_its_jvm_with_c1_alone(tmp_path):
    """In a process of its own (the suite's session is up already): the JVM's own arguments."""
    (tmp_path / "a.jsonl").write_text('{"text": "一"}\n')
    code = (
        "from etl.runtime.spark import SparkConfig, session\n"
        f"s = session('jit', SparkConfig(master='local[1]'), [{str(tmp_path)!r}])\n"
        "bean = s.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()\n"
        "print('ARGS', [str(a) for a in bean.getInputArguments()])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    (line,) = [x for x in out.stdout.splitlines() if x.startswith("ARGS")]
    assert C1_ONLY in line

"""Train the corpus tokenizer: jieba pre-segmentation + SentencePiece BPE, PanGu-α style.

    python -m jobs.train_tokenizer --input out/demo/dedup/documents --output out/demo/tokenizer \\
        --set tokenizer.vocab_size=8000
    spark-submit jobs/train_tokenizer.py --input hdfs:///corpus/documents --output models/tokenizer

Input: Parquet documents (``doc_id``, ``text``), e.g. a corpus build's ``documents/``.
Sample: the documents with the smallest ``xxhash64(seed, doc_id)``, at most ``sample.max_docs``
of them and ``sample.max_chars`` characters in all: seeded, independent of partitioning, and
bounded before anything reaches the driver. Executors pre-segment (jieba, in ``mapInArrow``);
the driver streams the lines, in sample order, to a temporary file and trains SentencePiece on
them (``filters.tokenizer`` states the pre-segmentation rule and why decoding round-trips).

Writes OUTPUT/tokenizer.model and OUTPUT/metadata.json (vocab size, sha256, special-token ids,
pre-segmentation rule version, SentencePiece settings, sample size in documents and characters)
through a staging directory renamed into place: a killed run leaves no half-written tokenizer.
The PanGu-α default is a 40,000-piece vocabulary; the ~4M-character demo corpus takes
``--set tokenizer.vocab_size=8000``.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from filters.tokenizer import TokenizerParams, train_sentencepiece, training_lines  # noqa: E402
from jobs.config import ConfigError, load_config, to_dict  # noqa: E402

log = logging.getLogger("zhcorpus")


@dataclass(frozen=True)
class SampleConfig:
    # Bounds on the training sample (ours): SentencePiece holds it in memory on the driver
    # (BPE on 50M characters takes a few GB); PanGu-α's vocabulary came from a corpus sample too.
    max_docs: int = 200_000
    max_chars: int = 50_000_000
    seed: int = 0  # the sample is the smallest xxhash64(seed, doc_id)


@dataclass(frozen=True)
class TrainTokenizerConfig:
    master: str = ""  # "" = spark-submit's master, or local[*]
    sample: SampleConfig = field(default_factory=SampleConfig)
    tokenizer: TokenizerParams = field(default_factory=TokenizerParams)


def _sample_key(seed: int):
    from pyspark.sql import functions as F

    return F.xxhash64(F.lit(seed), F.col("doc_id"))


def sample_cutoff(docs, cfg: SampleConfig) -> tuple[int, str, int, int] | None:
    """(key, doc_id) of the last sampled document in (key, doc_id) order, with the sample's
    document and character counts; None for an empty input. Only (key, doc_id, length) of at
    most ``max_docs`` documents reach the driver."""
    from pyspark.sql import functions as F

    head = (docs.select(_sample_key(cfg.seed).alias("key"), "doc_id", F.length("text").alias("chars"))
            .orderBy("key", "doc_id").limit(cfg.max_docs).collect())
    cutoff, n_docs, n_chars = None, 0, 0
    for row in head:
        if n_docs and n_chars + row.chars > cfg.max_chars:
            break
        cutoff, n_docs, n_chars = (row.key, row.doc_id), n_docs + 1, n_chars + row.chars
    return None if cutoff is None else (*cutoff, n_docs, n_chars)


def segmented_lines(docs, cfg: TrainTokenizerConfig, key: int, doc_id: str):
    """Training lines of the sampled documents, pre-segmented on the executors, in sample order.
    The documents are sorted before jieba runs: sorting its output instead would run jieba twice
    (once more for the sort's range sampling)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    k = _sample_key(cfg.sample.seed)
    sampled = (docs.where((k < key) | ((k == key) & (F.col("doc_id") <= doc_id)))
               .select(k.alias("key"), "doc_id", "text").orderBy("key", "doc_id"))
    hmm = cfg.tokenizer.jieba_hmm
    schema = pa.schema([("line", pa.string())])

    def segment(batches):  # mapInArrow keeps row order within a partition
        for b in batches:
            lines = [line for text in b.column("text").to_pylist() for line in training_lines(text, hmm)]
            yield pa.RecordBatch.from_pydict({"line": lines}, schema=schema)

    return sampled.mapInArrow(segment, "line string")


def train(cfg: TrainTokenizerConfig, inputs: list[str], output: str, spark=None) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from etl.spark import get_spark

    spark = spark or get_spark("zhcorpus-train-tokenizer", cfg.master or None)
    t0 = time.monotonic()
    docs = spark.read.parquet(*inputs)
    missing = {"doc_id", "text"} - set(docs.columns)
    if missing:
        raise ValueError(f"documents need columns doc_id and text; missing {sorted(missing)} in {inputs[:3]}")
    docs = docs.select("doc_id", "text").where(F.col("text").isNotNull() & (F.length("text") > 0))
    cut = sample_cutoff(docs, cfg.sample)
    if cut is None:
        raise ValueError(f"no documents with text in {inputs}")
    key, last_id, n_docs, n_chars = cut
    log.info("tokenizer sample: %d documents, %d characters", n_docs, n_chars)
    out_dir = Path(output)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.staging-", dir=out_dir.parent))
    staging.chmod(0o755)  # mkdtemp makes it private
    try:
        lines_file = staging / "lines.txt"
        with open(lines_file, "w", encoding="utf-8", newline="\n") as f:
            for row in segmented_lines(docs, cfg, key, last_id).toLocalIterator(prefetchPartitions=True):
                f.write(row.line + "\n")
        sample = {"documents": n_docs, "chars": n_chars, "seed": cfg.sample.seed,
                  "max_docs": cfg.sample.max_docs, "max_chars": cfg.sample.max_chars}
        meta = train_sentencepiece(lines_file, staging, cfg.tokenizer, sample,
                                   {"inputs": inputs, "config": to_dict(cfg)})
        lines_file.unlink()
        meta["train_seconds"] = round(time.monotonic() - t0, 1)  # not in metadata.json: varies per run
        _publish(staging, out_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return meta


def _publish(staging: Path, out_dir: Path) -> None:
    """Rename ``staging`` to ``out_dir``; an existing ``out_dir`` is moved aside first."""
    retired = None
    if out_dir.exists():
        retired = out_dir.with_name(f".{out_dir.name}.retired-{staging.name.rsplit('-', 1)[-1]}")
        out_dir.rename(retired)
    staging.rename(out_dir)
    if retired is not None:
        shutil.rmtree(retired)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", datefmt="%H:%M:%S")
    p = argparse.ArgumentParser(prog="jobs.train_tokenizer", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", nargs="+", required=True, help="Parquet documents (doc_id, text)")
    p.add_argument("--output", required=True, help="tokenizer directory (replaced if it exists)")
    p.add_argument("--config", default=None, help="TOML config (sections [sample], [tokenizer])")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config key, e.g. tokenizer.vocab_size=8000 or sample.max_docs=5000")
    args = p.parse_args(argv)
    try:
        cfg = load_config(TrainTokenizerConfig, args.config, args.overrides)
        meta = train(cfg, args.input, args.output)
    except (ConfigError, ValueError, FileNotFoundError) as e:
        log.error("%s", e)
        return 2
    log.info("tokenizer -> %s: vocabulary %d, sha256 %s..., special ids %s, sample %d documents / %d characters, "
             "%.1f s",
             args.output, meta["vocab_size"], meta["sha256"][:16], meta["special_ids"], meta["sample"]["documents"],
             meta["sample"]["chars"], meta["train_seconds"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Train the corpus tokenizer (jieba pre-segmentation + SentencePiece BPE, PanGu-α style) on Spark.

    python -m jobs.train_tokenizer --input out/demo/corpus/documents --output out/tokenizer \\
        --set tokenizer.vocab_size=8000
    spark-submit jobs/train_tokenizer.py --input hdfs:///corpus/documents --output models/tokenizer

The sample is the documents with the smallest xxhash64(seed, doc_id), bounded by
tokenizer.sample.max_docs and tokenizer.sample.max_chars before anything reaches the driver;
executors pre-segment, the driver trains. OUTPUT (tokenizer.model + metadata.json) is replaced
atomically. Exit codes: jobs/cli.py.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from typing import ClassVar

from base.log import setup_logging
from etl.read.records import ReaderConfig
from etl.runtime.objstore import read_parquet
from etl.runtime.paths import check_job_paths
from etl.runtime.spark import SparkConfig, session
from etl.shards.tokenizer_train import TokenizerConfig, train_tokenizer
from jobs import cli
from jobs.config import load_config


@dataclass(frozen=True)
class TrainTokenizerConfig:
    spark: SparkConfig = field(default_factory=SparkConfig)
    tokenizer: TokenizerConfig = field(default_factory=TokenizerConfig)
    reader: ReaderConfig = field(default_factory=ReaderConfig)  # reader.s3: an s3:// input or output's store
    RENAMED: ClassVar[dict[str, str]] = {
        "master": "spark.master",
        "sample": "tokenizer.sample",
        "tokenizer.params": "tokenizer",
    }


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    p = cli.parser("jobs.train_tokenizer", __doc__, None, "tokenizer.vocab_size=8000")
    p.add_argument("--input", nargs="+", required=True, help="Parquet documents (doc_id, text)")
    p.add_argument("--output", required=True, help="tokenizer directory (replaced atomically if it exists)")
    args = p.parse_args(argv)

    def body() -> int:
        cfg = load_config(TrainTokenizerConfig, args.config, args.overrides)
        check_job_paths(args.input, args.output)  # before any work: the input is never written
        spark = session("zhcorpus-train-tokenizer", cfg.spark)
        meta = train_tokenizer(
            read_parquet(spark, args.input, cfg.reader.s3),
            cfg.tokenizer,
            args.output,
            {"inputs": args.input, "config": asdict(cfg)},
            s3=cfg.reader.s3,
        )
        cli.log.info(
            "tokenizer -> %s: vocabulary %d, sha256 %s..., special ids %s, sample %d documents / %d characters, %.1f s",
            args.output,
            meta["vocab_size"],
            meta["sha256"][:16],
            meta["special_ids"],
            meta["sample"]["documents"],
            meta["sample"]["chars"],
            meta["train_seconds"],
        )
        return cli.EXIT_OK

    return cli.run_job(body)


if __name__ == "__main__":
    sys.exit(main())

"""Train the spam (PanGu-α) or quality (GPT-3 App. A) fastText classifier from labeled data.

    python -m jobs.train_classifier --kind spam --input junk_and_good.jsonl --output models/spam
    spark-submit jobs/train_classifier.py --kind quality --input hdfs:///labels/quality/ --output models/quality

Input: JSONL or Parquet with ``text`` and ``label``. Spam: labels ``spam`` (the junk, e.g. 10K
hand-picked Common Crawl pages) and ``ham`` (a sample of good text). Quality: ``hq`` (a reference
corpus of good text) and ``lq`` (raw crawl). Change the names with
``--set classifier.labels='["neg","pos"]'`` (negative first). Spark reads and preprocesses
(segmentation) in parallel; fastText trains on the driver. A hash of the text holds out
``classifier.valid_fraction`` for the metrics and the decision threshold: max F1 by default, or
``--set classifier.threshold_rule=keep_reference`` for the score that keeps
``classifier.keep_share`` (default 0.995) of the held-out good documents (hq / ham): a quality
model trained on reference vs raw crawl needs it to be usable as a hard drop rule.

Writes OUTPUT/model.bin and OUTPUT/metadata.json (sha256, preprocessing version, labels, counts,
threshold, precision/recall/F1 on the held-out split); an older model is replaced atomically.
Exit codes: jobs/cli.py.
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field
from typing import ClassVar

from base.log import setup_logging
from etl.classify.classifier_train import ClassifierTrainingConfig, read_labeled, train_classifier
from etl.runtime.paths import check_job_paths
from etl.runtime.spark import SparkConfig, session
from jobs import cli
from jobs.config import load_config


@dataclass(frozen=True)
class TrainClassifierConfig:
    spark: SparkConfig = field(default_factory=SparkConfig)
    classifier: ClassifierTrainingConfig = field(default_factory=ClassifierTrainingConfig)
    RENAMED: ClassVar[dict[str, str]] = {
        "master": "spark.master",
        **{k: f"classifier.{k}" for k in ("kind", "labels", "valid_fraction", "split_seed", "fasttext")},
    }


def main(argv: list[str] | None = None) -> int:
    setup_logging()
    p = cli.parser("jobs.train_classifier", __doc__, None, "classifier.fasttext.epoch=20")
    p.add_argument("--kind", choices=["spam", "quality"], required=True)
    p.add_argument("--input", nargs="+", required=True, help="labeled JSONL or Parquet (text, label)")
    p.add_argument("--output", required=True, help="model directory (replaced atomically if it exists)")
    args = p.parse_args(argv)

    def body() -> int:
        cfg = load_config(TrainClassifierConfig, args.config, [f"classifier.kind={args.kind}", *args.overrides])
        cfg.classifier.label_pair  # noqa: B018  (refuses bad labels before Spark starts)
        check_job_paths(args.input, args.output)  # before any work: the input is never written
        spark = session("zhcorpus-train-classifier", cfg.spark)
        meta = train_classifier(
            read_labeled(spark, args.input), cfg.classifier, args.output, {"inputs": args.input, "config": asdict(cfg)}
        )
        v = meta["validation"]
        cli.log.info(
            "%s model -> %s: held-out P %.3f R %.3f F1 %.3f at threshold %.3f (%s; keeps %.1f %% of "
            "good documents; %d documents); counts %s",
            args.kind,
            args.output,
            v["precision"],
            v["recall"],
            v["f1"],
            v["at_threshold"],
            meta["threshold_rule"],
            100 * v["good_kept"],
            v["documents"],
            meta["counts"],
        )
        return cli.EXIT_OK

    return cli.run_job(body)


if __name__ == "__main__":
    sys.exit(main())

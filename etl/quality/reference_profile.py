"""The reference profile: every quality signal's distribution over the reference corpus, the
ground the quality rules' thresholds stand on (``filters.quality.thresholds``). Written by
``jobs.train_fluency`` into the fluency model's directory as ``reference_percentiles.json``:
the value of each signal (the ``filters.quality.signals`` statistics and the fluency model's own
perplexity of each reference document) at the percentiles ``filters.quality.thresholds.PERCENTILES``.

Signals are computed on the executors (Arrow batches, the same functions the quality stage
runs); percentiles come from Spark's ``approxQuantile`` with a relative error of 1e-4, one pass
over all signal columns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from etl.runtime.publish import write_atomic
from filters.quality import thresholds as th
from filters.quality.screen import FLUENCY, signal_names

RELATIVE_ERROR = 1e-4


def _signals_frame(texts: DataFrame, model_dir: str, sha256: str) -> DataFrame:
    """One row of signal values per reference document. ``texts``: ``text`` and ``held`` (bool):
    the fluency model scores only held-out documents (a model scores the text it was trained on
    far lower than unseen text); its column is null for the others."""
    from pyspark import SparkFiles

    from etl.runtime.ship import ship_directory

    name = ship_directory(texts.sparkSession, model_dir, f"zhcorpus-fluency-{sha256[:16]}")
    schema = T.StructType([T.StructField(n, T.DoubleType()) for n in signal_names()])

    def apply(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from filters.quality.fluency.model import FluencyModel
        from filters.quality.signals import signals_batch

        model = FluencyModel.load(SparkFiles.get(name), sha256)
        for batch in batches:
            docs = [t or "" for t in batch.column("text").to_pylist()]
            if not docs:
                continue
            values = signals_batch(docs)
            held = np.asarray(batch.column("held").to_pylist(), dtype=bool)
            ppl = np.full(len(docs), np.nan)
            if held.any():
                ppl[held] = model.perplexity_batch([d for d, h in zip(docs, held) if h])
            values[FLUENCY] = ppl
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(np.asarray(values[n], np.float64), pa.float64(), mask=np.isnan(values[n]))
                    for n in signal_names()
                ],
                names=signal_names(),
            )

    return texts.select("text", "held").mapInArrow(apply, schema)


def reference_profile(texts: DataFrame, model_dir: str, sha256: str, description: str, scored: str) -> dict[str, Any]:
    """Compute the profile of the reference ``texts`` (``text``, ``held``) under the fluency model
    in ``model_dir`` (checksum ``sha256``) and write it there atomically. Returns it."""
    frame = _signals_frame(texts, model_dir, sha256).cache()
    try:
        n, held = frame.count(), frame.where(F.col(FLUENCY).isNotNull()).count()
        probs = [p / 100 for p in th.PERCENTILES]
        quantiles = frame.approxQuantile(signal_names(), probs, RELATIVE_ERROR)
    finally:
        frame.unpersist()
    signals = {name: [round(float(v), 6) for v in q] for name, q in zip(signal_names(), quantiles)}
    profile = {
        "version": th.PROFILE_VERSION,
        "documents": n,
        "fluency_documents": held,
        "reference": {"description": description, "fluency_scored": scored},
        "percentiles": list(th.PERCENTILES),
        "signals": signals,
    }
    if held:
        cut = [float(np.interp(p, th.PERCENTILES, signals[FLUENCY])) for p in (30, 60)]
        profile["ccnet_buckets"] = {
            "head_below": cut[0],
            "tail_above": cut[1],
            "source": "CCNet (Wenzek et al. 2020 §3.3): head < p30 <= middle < p60 <= tail",
        }
    write_atomic(Path(model_dir) / th.PROFILE_FILE, json.dumps(profile, ensure_ascii=False, indent=1))
    return profile

"""text-dedup 0.4.1's MinHash dedup (single node: HF datasets + polars) on the benchmark corpus, as
a peer in ``bench.bench_dedup``. Runs in its own venv (text-dedup needs Python >= 3.12 and pins
its own numpy/pandas; ``make bench-dedup`` builds build/text-dedup-venv), never imported by the
project:

    build/text-dedup-venv/bin/python bench/peers/text_dedup_peer.py CORPUS_DIR OUT_DIR --bands 16 --rows 8 ...

Prints one JSON line: seconds (from loading the Parquet to saving the output, interpreter start
and imports excluded, as Spark's start is for the Spark methods) and the (doc_id, duplicate_of)
pairs file it wrote. Its word tokenizer (split on \\W) leaves a Chinese sentence as one token, so
it is given the same shingles as every other method: character n-grams of
``filters.dedup.minhash.normalise`` text (its ``_get_tokenize_func`` returns the characters).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("out")
    for name, default in (("shingle", 5), ("num_perm", 128), ("bands", 16), ("rows", 8), ("seed", 1), ("num_proc", 1)):
        ap.add_argument(f"--{name.replace('_', '-')}", dest=name, type=int, default=default)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--no-verify", action="store_true", help="skip text-dedup's check_false_positive")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import pyarrow.parquet as pq
    from text_dedup import minhash as td
    from text_dedup.config import Config, LocalInputConfig, MinHashAlgorithmConfig, OutputConfig
    from text_dedup.config.debug import DebugConfig

    from filters.dedup import minhash as mh

    MinHashAlgorithmConfig._get_tokenize_func = lambda self: lambda content: list(mh.normalise(content))
    files = sorted(str(p) for p in (Path(args.corpus) / "documents").glob("*.parquet"))
    out = Path(args.out)
    cfg = Config.model_construct(
        input=LocalInputConfig(
            file_type="parquet", read_arguments={"path": "parquet", "data_files": files, "split": "train"}
        ),
        algorithm=MinHashAlgorithmConfig(
            algorithm_name="minhash",
            text_column="text",
            num_perm=args.num_perm,
            threshold=args.threshold,
            bands=args.bands,
            rows=args.rows,
            ngram_size=args.shingle,
            min_length=1,
            seed=args.seed,
            num_proc=args.num_proc,
            check_false_positive=not args.no_verify,
        ),
        output=OutputConfig(
            output_dir=str(out / "output"), save_clusters=True, keep_index_column=True, clean_cache=True
        ),
        debug=DebugConfig(),
    )
    t0 = time.perf_counter()
    td.main(cfg)
    seconds = time.perf_counter() - t0
    ids = [d for f in files for d in pq.read_table(f, columns=["doc_id"]).column("doc_id").to_pylist()]
    with open(out / "output" / "clusters.pickle", "rb") as f:
        clusters: dict[int, int] = pickle.load(f)
    pairs = sorted({tuple(sorted((ids[i], ids[c]))) for i, c in clusters.items() if i != c})
    (out / "pairs.json").write_text(json.dumps(pairs))
    print(json.dumps({"seconds": seconds, "pairs_file": str(out / "pairs.json"), "pairs": len(pairs)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

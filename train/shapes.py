"""The model's shape and the named sizes, without torch: what ``train.model`` builds, what the
layout planner (``train.planner``) computes with, and the ``[model]`` section of the jobs' configs.

Presets: PanGu-α Table 1 (2.6B, 13B, 200B; arXiv 2104.12369) and the released 350M model, all with
PanGu-α's 40,000-token vocabulary and 1,024-token context, plus ``debug``, the tiny model the tests
train. A config file selects one with ``model.preset`` and replaces any field on top of it.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass
from typing import Literal

# Activation recomputation per transformer block (``train.parallel.ac``; Korthikanti et al. 2022):
# none | selective (recompute the cheap ops between the matmuls) | full (keep only the block input).
RecomputeMode = Literal["none", "selective", "full"]
RECOMPUTE_MODES: tuple[str, ...] = typing.get_args(RecomputeMode)


def padded_vocab(vocab_size: int, multiple: int) -> int:
    """Embedding rows: the vocabulary padded up to a multiple of ``multiple`` (Megatron-LM's
    ``_vocab_size_with_padding``, which uses 128 · tp)."""
    return math.ceil(vocab_size / multiple) * multiple


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int = 40_000  # tokenizer vocabulary (PanGu-α: 40,000 BPE tokens)
    vocab_multiple: int = 128  # embedding rows are padded up to a multiple of this (Megatron's
    # make-vocab-size-divisible-by); tp must divide the padded size
    seq_len: int = 1024  # context length = rows of the position embeddings
    n_layers: int = 24  # transformer blocks (the query layer is not counted)
    dim: int = 1024  # hidden size
    ffn_dim: int = 4096  # MLP inner size (4 · dim in GPT-3 and PanGu-α)
    n_heads: int = 16  # attention heads; head size = dim / n_heads
    query_layer: bool = True  # PanGu-α query layer on top of the blocks (§2.2.2)
    dropout: float = 0.0  # embedding / residual / attention dropout (0 keeps runs deterministic)
    norm_eps: float = 1e-5
    init_std: float = 0.02  # N(0, init_std) for weights; residual projections get / sqrt(2 L)

    def __post_init__(self):
        for name in ("vocab_size", "vocab_multiple", "seq_len", "n_layers", "dim", "ffn_dim", "n_heads"):
            if getattr(self, name) < 1:
                raise ValueError(f"model {name} must be >= 1, got {getattr(self, name)}")
        if self.dim % self.n_heads:
            raise ValueError(f"dim={self.dim} is not divisible by n_heads={self.n_heads}")

    @property
    def padded_vocab(self) -> int:
        """Rows of the (tied) embedding / output layer; ids >= vocab_size are never fed or targeted."""
        return padded_vocab(self.vocab_size, self.vocab_multiple)

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    def replace(self, **changes) -> "ModelConfig":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_preset(cls, name: str) -> "ModelConfig":
        """A named size, case-insensitively (``13b`` = ``13B``); the config loader's ``model.preset``."""
        by_lower = {k.lower(): v for k, v in PRESETS.items()}
        if not isinstance(name, str) or name.lower() not in by_lower:
            raise ValueError(f"unknown model preset {name!r}; choose from {', '.join(PRESETS)}")
        return by_lower[name.lower()]


# The released MindSpore code runs 2.6B with 32 heads; Table 1 lists 40, which we follow.
PRESETS: dict[str, ModelConfig] = {
    "debug": ModelConfig(vocab_size=1001, vocab_multiple=8, seq_len=16, n_layers=4, dim=32, ffn_dim=64, n_heads=4),
    "350M": ModelConfig(n_layers=24, dim=1024, ffn_dim=4096, n_heads=16),
    "2.6B": ModelConfig(n_layers=32, dim=2560, ffn_dim=10240, n_heads=40),
    "13B": ModelConfig(n_layers=40, dim=5120, ffn_dim=20480, n_heads=40),
    "200B": ModelConfig(n_layers=64, dim=16384, ffn_dim=65536, n_heads=128),
}


def preset(name: str, **overrides) -> ModelConfig:
    """Preset ``name`` (case-insensitive) with ``overrides`` replacing some of its fields."""
    return ModelConfig.from_preset(name).replace(**overrides)

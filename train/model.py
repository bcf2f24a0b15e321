"""GPT decoder with the PanGu-α query layer, written for a single device.

Token + learned position embeddings, pre-LayerNorm blocks (multi-head causal attention, GeLU
MLP), a final LayerNorm, an optional PanGu-α query layer (arXiv 2104.12369 §2.2.2) and an output
layer tied to the token embedding. Nothing here knows about parallelism: ``train/parallel``
applies tensor and pipeline parallelism from outside, which is why

* the layers live in a ``ModuleDict`` keyed by ``str(i)`` (a pipeline stage deletes the ones it
  does not own and the names of the rest stay the same as in the full model),
* ``forward`` passes through whatever parts a stage lacks (no ``embed``: the input is already
  hidden states; no ``output``: it returns hidden states),
* attention reshapes with ``-1`` heads, so a tensor-parallel rank runs its ``n_heads / tp`` heads,
* initialisation is per parameter, seeded by ``(seed, name)``, so any subset of the model (one
  stage on one rank) gets exactly the weights the full model would have.

Its config, ``ModelConfig``, and the named sizes (``PRESETS``, ``preset``) live in
``train/shapes.py``, without torch, so the layout planner and the jobs' configs share them.
"""

from __future__ import annotations

import math
import zlib

import torch
import torch.nn.functional as F
from torch import nn

from train.shapes import PRESETS, ModelConfig, preset  # noqa: F401  (the model's config, re-exported)


class Embeddings(nn.Module):
    """Token + learned position embeddings: (B, T) ids -> (B, T, C)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.tok = nn.Embedding(cfg.padded_vocab, cfg.dim)
        self.pos = nn.Embedding(cfg.seq_len, cfg.dim)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        return self.drop(self.tok(tokens) + self.pos(pos))  # (B, T, C)


class Attention(nn.Module):
    """Causal multi-head attention; separate q/k/v projections so each can be column-parallel."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.head_dim = cfg.head_dim
        self.dropout = cfg.dropout
        self.wq = nn.Linear(cfg.dim, cfg.dim)
        # No key bias: softmax ignores a constant added to all of a query's scores, so its gradient
        # is zero up to rounding, and Adam would turn that noise into random updates.
        self.wk = nn.Linear(cfg.dim, cfg.dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.dim)
        self.wo = nn.Linear(cfg.dim, cfg.dim)
        self.resid_drop = nn.Dropout(cfg.dropout)

    def query_input(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        # -1 heads: under tensor parallelism this rank holds n_heads / tp of them.
        q = self.wq(self.query_input(x)).view(B, T, -1, self.head_dim).transpose(1, 2)  # (B, H, T, D)
        k = self.wk(x).view(B, T, -1, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(B, T, -1, self.head_dim).transpose(1, 2)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)  # (B, H, T, D)
        return self.resid_drop(self.wo(y.transpose(1, 2).reshape(B, T, -1)))  # (B, T, C)


class QueryAttention(Attention):
    """PanGu-α query layer attention: the query is a learned embedding of the *next* position.

    Keys and values come from the (normalised) hidden states; the query at position n is the
    embedding p_{n+1} of the position to predict, so the layer explicitly asks "what comes at n+1"
    while still attending causally to tokens <= n. The lookup happens here, after any
    sequence-parallel gather, so it always sees the full sequence length.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        self.query_emb = nn.Embedding(cfg.seq_len, cfg.dim)

    def query_input(self, x: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(x.shape[1], device=x.device)
        return self.query_emb(pos).expand_as(x)  # (B, T, C)


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.ffn_dim)
        self.w2 = nn.Linear(cfg.ffn_dim, cfg.dim)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.w2(F.gelu(self.w1(x))))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, attention: type[Attention] = Attention):
        super().__init__()
        self.attention_norm = nn.LayerNorm(cfg.dim, eps=cfg.norm_eps)
        self.attention = attention(cfg)
        self.mlp_norm = nn.LayerNorm(cfg.dim, eps=cfg.norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class GPT(nn.Module):
    """tokens (B, T) -> logits (B, T, padded_vocab); stages without some parts pass through them."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.embed: Embeddings | None = Embeddings(cfg)
        self.layers = nn.ModuleDict({str(i): Block(cfg) for i in range(cfg.n_layers)})
        self.norm: nn.LayerNorm | None = nn.LayerNorm(cfg.dim, eps=cfg.norm_eps)
        self.query_layer: Block | None = Block(cfg, QueryAttention) if cfg.query_layer else None
        self.output: nn.Linear | None = nn.Linear(cfg.dim, cfg.padded_vocab, bias=False)
        self.tie_weights()

    def tie_weights(self) -> None:
        """Share the output matrix with the token embedding (when this module holds both)."""
        if self.embed is not None and self.output is not None:
            self.output.weight = self.embed.tok.weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x) if self.embed is not None else x  # (B, T, C)
        for layer in self.layers.values():
            h = layer(h)
        if self.norm is not None:
            h = self.norm(h)
        if self.query_layer is not None:
            h = self.query_layer(h)
        return self.output(h) if self.output is not None else h  # (B, T, V) or (B, T, C)

    @torch.no_grad()
    def init_weights(self, seed: int) -> None:
        """Initialise every parameter from ``(seed, its name)``: any stage of the model gets the same
        values as the same parameters of the full model, whatever else it holds."""
        for name, p in self.named_parameters():
            if name.endswith("output.weight"):
                name = name.replace("output.weight", "embed.tok.weight")  # tied: one init
            g = torch.Generator(device="cpu").manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif p.ndim == 1:
                p.zero_()
            else:
                std = self.cfg.init_std
                if name.endswith(("wo.weight", "w2.weight")):
                    std /= math.sqrt(2 * self.cfg.n_layers)
                p.copy_(torch.randn(p.shape, generator=g) * std)


def build_model(cfg: ModelConfig, seed: int, device: torch.device | str = "cpu") -> GPT:
    """The full model with its seeded weights, on ``device``."""
    model = GPT(cfg).to(device)
    model.init_weights(seed)
    return model


def num_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # tied weights count once

"""``torch.compile`` per transformer block, applied from outside like the other parallelisms.

Each block (and the PanGu-α query layer) is compiled in place with ``nn.Module.compile``, so the
parameter names, the state dict and the checkpoints do not change. The blocks share one code
object and parameters are graph inputs, so Dynamo traces one block and the others reuse its graph
(torchtitan compiles per block for the same reason: repeated structure, short compile time).
Applied after tensor parallelism and activation recomputation (the compiled region is the
recomputed block, DTensor ops included) and before FSDP2, whose gather/reduce hooks stay outside
the compiled code. The first step pays for compilation; ``Trainer`` logs its wall time.
"""

from __future__ import annotations

from torch import nn

from train.config import COMPILE_BACKENDS, CompileBackend


def apply_compile(model: nn.Module, backend: CompileBackend = "inductor") -> None:
    """Compile every block of ``model.layers`` and the query layer in place."""
    if backend not in COMPILE_BACKENDS:
        raise ValueError(f"compile_backend must be one of {', '.join(COMPILE_BACKENDS)}, got {backend!r}")
    for block in model.layers.values():
        block.compile(backend=backend)
    if getattr(model, "query_layer", None) is not None:
        model.query_layer.compile(backend=backend)

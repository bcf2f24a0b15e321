"""Parallelism applied from outside to the single-device GPT in ``train.model``.

``Trainer`` composes the pieces (mesh, tensor/pipeline/data parallel, ZeRO-1 or FSDP2,
recomputation, ``torch.compile``, bf16);
``ParallelConfig`` and ``TrainConfig`` are its config sections (``parallel.*``, ``train.*``).
"""

from train.config import TrainConfig
from train.layout import LayoutError, ParallelConfig, at_world_size, elastic_problems, layout_problems, validate
from train.parallel.step import Trainer

__all__ = [
    "LayoutError",
    "ParallelConfig",
    "TrainConfig",
    "Trainer",
    "at_world_size",
    "elastic_problems",
    "layout_problems",
    "validate",
]

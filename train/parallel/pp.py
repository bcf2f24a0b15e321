"""Pipeline parallelism: a split of the layers into stages, and a ``torch.distributed.pipelining``
schedule to run them.

``num_stages = pp * virtual_stages`` stages of ``n_layers / num_stages`` consecutive blocks each;
stage 0 also holds the embeddings, the last stage the final LayerNorm, query layer and output
layer. Stages are placed round-robin (rank r holds stages r, r + pp, …), the layout Interleaved
1F1B expects; with one stage per rank that is the plain split GPipe and 1F1B use. The first and
last stages both hold the tied embedding matrix; ``TiedEmbeddingSync`` keeps their gradients equal.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe, ScheduleInterleaved1F1B

from train.layout import Schedule
from train.model import GPT, ModelConfig
from train.parallel.zero import like_param, local_grad

_SCHEDULES = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B, "interleaved_1f1b": ScheduleInterleaved1F1B}


def stage_ids(pp_rank: int, pp: int, virtual_stages: int) -> list[int]:
    return [pp_rank + v * pp for v in range(virtual_stages)]


def stage_layers(cfg: ModelConfig, stage: int, num_stages: int) -> range:
    per_stage = cfg.n_layers // num_stages
    return range(stage * per_stage, (stage + 1) * per_stage)


def stage_model(cfg: ModelConfig, stage: int, num_stages: int) -> GPT:
    """The model with only stage ``stage``'s parts, on the meta device (no memory yet)."""
    with torch.device("meta"):
        model = GPT(cfg)
    keep = {str(i) for i in stage_layers(cfg, stage, num_stages)}
    for name in list(model.layers):
        if name not in keep:
            del model.layers[name]
    if stage != 0:
        model.embed = None
    if stage != num_stages - 1:
        model.norm = model.query_layer = model.output = None
    return model


def materialize(model: GPT, seed: int, device: torch.device) -> GPT:
    """Allocate a meta model on ``device`` and give it the seeded weights of the full model."""
    model.to_empty(device=device)
    model.tie_weights()  # to_empty makes a new tensor per module, which unties them
    model.init_weights(seed)
    return model


def build_schedule(
    parts: list[nn.Module],
    stages: list[int],
    num_stages: int,
    n_microbatches: int,
    schedule: Schedule,
    loss_fn,
    pp_group,
    device: torch.device,
):
    """A schedule whose ``step`` runs forward + backward of all micro-batches on this rank's stages.

    ``scale_grads`` stays True: the schedule divides the summed micro-batch gradients by their
    count, so ``loss_fn`` returns the plain per-micro-batch mean.
    """
    pstages = [PipelineStage(part, s, num_stages, device, group=pp_group) for part, s in zip(parts, stages)]
    if schedule == "interleaved_1f1b":
        return ScheduleInterleaved1F1B(pstages, n_microbatches=n_microbatches, loss_fn=loss_fn)
    return _SCHEDULES[schedule](pstages[0], n_microbatches=n_microbatches, loss_fn=loss_fn)


class TiedEmbeddingSync:
    """All-reduce the tied embedding's gradient between the first and last pipeline stages.

    The token embedding (stage 0) and output layer (last stage) are one matrix in the model, but
    two copies when they live on different ranks, and each copy gets only its own use's gradient. Summing
    the two (for each (dp, tp) coordinate, over a 2-rank group) gives both copies the full
    gradient, so identical optimizer steps keep them identical.
    """

    def __init__(self, mesh: DeviceMesh, parts: list[GPT]):
        self.group = None
        self.weight = None
        grid = mesh.mesh.reshape(mesh.mesh.shape[0], -1, mesh.mesh.shape[-1])  # (pp, dp, tp) global ranks
        if grid.shape[0] == 1:
            return
        me = dist.get_rank()
        for d in range(grid.shape[1]):  # every rank creates every group, in the same order
            for t in range(grid.shape[2]):
                pair = [int(grid[0, d, t]), int(grid[-1, d, t])]
                group = dist.new_group(pair)
                if me in pair:
                    self.group = group
        for part in parts:
            if part.embed is not None:
                self.weight = part.embed.tok.weight
            elif part.output is not None:
                self.weight = part.output.weight

    @torch.no_grad()
    def sync(self) -> None:
        if self.group is None or self.weight is None:
            return
        g = local_grad(self.weight).clone()
        dist.all_reduce(g, group=self.group)
        self.weight.grad = like_param(self.weight, g)

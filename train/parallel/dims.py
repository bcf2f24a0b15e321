"""The (pp, dp_replicate, dp_shard, tp) device mesh of a layout (``train.layout``).

Ranks are laid out with tp innermost (neighbouring ranks, the fastest links, do the chattiest
collectives), then dp, then pp: rank = (pp_rank * dp + dp_rank) * tp + tp_rank. The dp ranks
are split once more, replicas outermost: dp_rank = replica * (dp / dp_replicate) + shard rank.
With ZeRO-1 there is one replica group (the optimizer state is sharded over all of dp); FSDP2
shards parameters, gradients and optimizer state over ``dp / dp_replicate`` ranks and, when
``dp_replicate > 1``, keeps that many copies (HSDP: reduce-scatter inside a shard group, then
all-reduce across the replicas, torchtitan's ``dp_replicate`` × ``dp_shard``).
"""

from __future__ import annotations

from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

from train.layout import ParallelConfig

MESH_DIMS = ("pp", "dp_replicate", "dp_shard", "tp")


def build_mesh(par: ParallelConfig, device_type: str = "cpu") -> DeviceMesh:
    """The (pp, dp_replicate, dp_shard, tp) mesh over the already-initialised default process
    group; one mesh, so FSDP2's dp sub-mesh and the tensor-parallel DTensors share a root."""
    shape = (par.pp, par.dp_replicate, par.dp // par.dp_replicate, par.tp)
    return init_device_mesh(device_type, shape, mesh_dim_names=MESH_DIMS)

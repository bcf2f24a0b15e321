"""Checks before a Ray Train launch: does the cluster have room for the layout's workers?

Ray Train asks for ``tp * pp * dp`` workers of ``{CPU: ray.cpus_per_worker}`` (plus one GPU each
when training on GPUs), and each worker must fit on one node. When they cannot, Ray 2.60 does not
fail: the Train controller retries ``WorkerGroupStartupTimeoutError`` forever (seen with 4 workers
on a cluster of 2 CPUs). So the driver compares the layout with the nodes' resources first and
refuses with what is missing and how to fix it.

Only the cluster's capacity (each alive node's total resources) is a hard limit. Resources that
other jobs hold now are not: the run waits for them, which is logged as a warning.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Literal

from base.errors import Refusal

log = logging.getLogger("zhcorpus")


class LaunchError(Refusal):
    """A training run refused before any worker starts: a config that does not fit the shards, the
    checkpoint it would resume from, or the Ray cluster it would run on (one class for
    ``train.job.resolve`` and ``check_cluster_fits``)."""


@dataclass(frozen=True)
class Node:
    """One alive Ray node's total resources."""

    name: str  # address and a short node id, for messages
    cpus: float
    gpus: float


def worker_slots(node: Node, cpus_per_worker: float, gpus_per_worker: int) -> int:
    """How many workers of this shape fit on ``node`` at once."""
    slots = math.floor(node.cpus / cpus_per_worker + 1e-9) if cpus_per_worker > 0 else 1 << 30
    if gpus_per_worker:
        slots = min(slots, math.floor(node.gpus / gpus_per_worker + 1e-9))
    return slots


def capacity_problems(
    nodes: list[Node], workers: int, cpus_per_worker: float, gpus_per_worker: int, layout: str
) -> list[str]:
    """Why ``workers`` workers of {CPU: cpus_per_worker, GPU: gpus_per_worker} cannot all run at
    once on ``nodes``; empty when they can."""
    if cpus_per_worker <= 0:
        return [f"ray.cpus_per_worker must be > 0, got {cpus_per_worker}"]
    if not nodes:
        return ["the Ray cluster has no alive node"]
    shape = f"{cpus_per_worker:g} CPU" + (f" + {gpus_per_worker} GPU" if gpus_per_worker else "")
    slots = {n.name: worker_slots(n, cpus_per_worker, gpus_per_worker) for n in nodes}
    room = sum(slots.values())
    if room >= workers:
        return []
    per_node = "; ".join(
        f"{n.name}: {n.cpus:g} CPU" + (f", {n.gpus:g} GPU" if gpus_per_worker else "") + f" -> {slots[n.name]}"
        for n in nodes
    )
    fixes = "start the nodes with more CPUs (ray start --num-cpus N)" if not gpus_per_worker else "add GPU nodes"
    return [
        f"{layout} needs {workers} Ray workers of {shape} each, but the cluster has room for {room} "
        f"({per_node}): {fixes}, lower ray.cpus_per_worker, or choose a layout with fewer workers "
        "(python -m jobs.plan_layout)"
    ]


def cluster_nodes() -> list[Node]:
    """The alive nodes of the Ray cluster this process is connected to."""
    import ray

    return [
        Node(
            name=f"{n.get('NodeManagerAddress', '?')} ({n['NodeID'][:8]})",
            cpus=float(n.get("Resources", {}).get("CPU", 0)),
            gpus=float(n.get("Resources", {}).get("GPU", 0)),
        )
        for n in ray.nodes()
        if n.get("Alive")
    ]


def check_cluster_fits(
    parallel, cpus_per_worker: float, use_gpu: Literal["auto", True, False] = "auto", nodes: list[Node] | None = None
) -> bool:
    """Refuse (``LaunchError``) a layout the connected Ray cluster cannot run; returns whether the
    workers use GPUs (``use_gpu="auto"``: when any node has one). ``parallel``: a
    ``ParallelConfig`` (tp, pp, dp, world_size)."""
    connected = nodes is None
    nodes = cluster_nodes() if connected else nodes
    gpus = use_gpu if use_gpu != "auto" else any(n.gpus >= 1 for n in nodes)
    if gpus and not any(n.gpus >= 1 for n in nodes):
        raise LaunchError("ray.use_gpu=true, but no node of the Ray cluster has a GPU")
    layout = f"the layout tp={parallel.tp} x pp={parallel.pp} x dp={parallel.dp}"
    problems = capacity_problems(nodes, parallel.world_size, cpus_per_worker, 1 if gpus else 0, layout)
    if problems:
        raise LaunchError("cannot launch: " + "; ".join(problems))
    if connected:
        _warn_if_busy(parallel.world_size, cpus_per_worker)
    return bool(gpus)


def _warn_if_busy(workers: int, cpus_per_worker: float) -> None:
    import ray

    free = ray.available_resources().get("CPU", 0.0)
    if free + 1e-9 < workers * cpus_per_worker:
        log.warning(
            "the Ray cluster has %g CPUs free now and the run needs %g: it waits until other jobs release them",
            free,
            workers * cpus_per_worker,
        )

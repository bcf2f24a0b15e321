"""torch.distributed's world process group with its rendezvous store on one address only.

torch's ``TCPStore`` server, which rank 0 hosts for the whole run, binds its port on every
interface (``*:port``) whatever host name it is given, and it has no authentication. Given a
socket that is already bound (``master_listen_fd``), it listens on that socket instead. So rank 0
binds one itself, to the master address only (the node's address as Ray sees it: 127.0.0.1 on a
one-host head), and hands the descriptor to the store; the other ranks connect to it as clients.

    init_world(backend, rank, world_size, host, port, timeout, listen_fd)   any launcher
    BoundStoreTorchConfig                                                   Ray Train: TorchTrainer(torch_config=...)

Ray Train 2.60 has no public hook for the store: ``TorchConfig``'s backend (``on_start``) builds
the group through ``init_method="env://"``, i.e. torch's own wildcard store. ``BoundStoreTorchConfig``
keeps everything of it (gloo on CPU, NCCL on GPU unless ``backend`` says otherwise, ``timeout_s``,
the MASTER_*/RANK/LOCAL_RANK environment, process-group teardown in ``on_shutdown``) except how the
store is made. A worker group Ray restarts after a failure runs ``on_start`` again, so the new
workers rendezvous on a new socket.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from datetime import timedelta

import ray
import torch.distributed as dist
from ray.train._internal.worker_group import WorkerGroup as V1WorkerGroup
from ray.train.torch.config import TorchConfig, _is_backend_nccl, _set_torch_distributed_env_vars, _TorchBackend

log = logging.getLogger("zhcorpus")

# torch reads this before creating an NCCL group: fail a collective that times out instead of
# hanging (what Ray Train's own setup sets when the user did not choose; torch >= 2.2 names).
NCCL_ERROR_HANDLING = ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "TORCH_NCCL_BLOCKING_WAIT")

# The socket rank 0 bound in ``_bind_on_rank0``, kept in that worker process until
# ``_join_world`` hands it to the store: one call returns the port to the driver, the next one
# (on every rank at once) rendezvous. Holding the bound socket in between, instead of closing it
# and binding the port again, means nobody else can take the port meanwhile.
_BOUND: list[socket.socket] = []


def bind_listener(host: str) -> socket.socket:
    """A TCP socket bound to ``(host, free port)`` and listening: connections queue until the
    store's server accepts them."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
        sock.listen(socket.SOMAXCONN)
    except OSError:
        sock.close()
        raise
    return sock


def init_world(
    backend: str, rank: int, world_size: int, host: str, port: int, timeout: timedelta, listen_fd: int | None = None
) -> None:
    """The default process group of ``world_size`` ranks over a ``TCPStore`` at ``host:port``.
    Rank 0 passes ``listen_fd``, a socket bound to ``host:port`` (``bind_listener``) whose
    ownership goes to the store (torch closes it when the group is destroyed); the other ranks
    pass None and connect."""
    if (rank == 0) != (listen_fd is not None):
        raise ValueError(f"rank {rank}: rank 0, and only rank 0, serves the store on listen_fd")
    if _is_backend_nccl(backend) and not any(k in os.environ for k in NCCL_ERROR_HANDLING):
        os.environ[NCCL_ERROR_HANDLING[0]] = "1"
    store = dist.TCPStore(host, port, world_size, is_master=rank == 0, timeout=timeout, master_listen_fd=listen_fd)
    # The same key namespace as torch's env:// and tcp:// rendezvous.
    dist.init_process_group(
        backend, store=dist.PrefixStore("default_pg", store), rank=rank, world_size=world_size, timeout=timeout
    )


# --- Ray Train ------------------------------------------------------------------------------------


def _bind_on_rank0() -> tuple[str, int]:
    """On rank 0's worker: bind the store's socket to this node's address; (address, port)."""
    host = ray.util.get_node_ip_address()
    while _BOUND:  # from a setup that failed before its rendezvous
        _BOUND.pop().close()
    _BOUND.append(bind_listener(host))
    return host, _BOUND[0].getsockname()[1]


def _set_master_env(host: str, port: int) -> None:
    # What Ray's env:// setup exports; nothing here reads them, code run in the loop may.
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = host, str(port)


def _join_world(backend: str, rank: int, world_size: int, host: str, port: int, timeout_s: int) -> None:
    listen_fd = _BOUND.pop().detach() if rank == 0 else None
    log.debug("rank %d of %d joining the %s group, store %s:%d", rank, world_size, backend, host, port)
    init_world(backend, rank, world_size, host, port, timedelta(seconds=timeout_s), listen_fd)


class _BoundStoreBackend(_TorchBackend):
    """Ray Train's torch backend, with the store on the master address only (module docstring)."""

    def on_start(self, worker_group, backend_config: "BoundStoreTorchConfig") -> None:
        backend = backend_config.backend
        if backend is None:  # TorchTrainer fills it in from ScalingConfig.use_gpu; Ray's fallback
            backend = "nccl" if worker_group.get_resources_per_worker().get("GPU", 0) > 0 else "gloo"
        if backend in ("hccl", "tpu_dist"):
            raise ValueError(f"BoundStoreTorchConfig sets up gloo and NCCL groups, not {backend}")
        host, port = worker_group.execute_single(0, _bind_on_rank0)
        worker_group.execute(_set_master_env, host, port)
        if not isinstance(worker_group, V1WorkerGroup):  # Train V1 sets them in on_training_start
            worker_group.execute(_set_torch_distributed_env_vars)
        world_size = len(worker_group)
        ray.get(
            [
                worker_group.execute_single_async(
                    rank, _join_world, backend, rank, world_size, host, port, backend_config.timeout_s
                )
                for rank in range(world_size)
            ]
        )


@dataclass
class BoundStoreTorchConfig(TorchConfig):
    """``TorchConfig`` (same fields: ``backend``, ``timeout_s``) whose process group's store
    listens on the master address only. ``init_method`` is not used: the store is made here."""

    @property
    def backend_cls(self):
        return _BoundStoreBackend

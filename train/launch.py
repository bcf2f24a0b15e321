"""Ray start-up, written once for every job that needs Ray (``jobs.train_lm``, the rule judge's
proxy runs in ``train/proxy.py``).

``connect(address, cpus)`` joins a running cluster when given an address or when $RAY_ADDRESS is
set (``ray job submit`` sets it for its entrypoint); otherwise it starts a local Ray with
``start_local_ray``, whose every socket is on 127.0.0.1: GCS, raylet, workers, the dashboard and
its agent, the runtime-env agent and the metrics exporters.

Why a switch and not an address: Ray 2.60 replaces a node address of 127.0.0.1 with the host's LAN
address when it starts a node (``services.resolve_ip_for_localhost``: other nodes must reach it), and
then GCS, raylets and workers listen on every interface, the agents on the LAN address and the
metrics exporters on 0.0.0.0, whatever ``_node_ip_address`` or ``dashboard_host`` say. Ray keeps
127.0.0.1 only where it believes multi-node clusters are off: ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``
(the default on macOS and Windows). Its one other effect is that no node can join, which is what a
local run wants; ``deploy/ray-node.sh head`` sets it for ``ray start`` for the same reason.

torch.distributed's transports bind listeners of their own in the workers: gloo to the address the
host's name resolves to (on many hosts the LAN address), NCCL's bootstrap to the first interface
that is not loopback. The local Ray's processes get GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME set to
the loopback interface, so the workers' collectives stay on it too (one host needs nothing else).

Token authentication is on for a local cluster in Ray 2.60 unless RAY_AUTH_MODE says otherwise
(the token is ~/.ray/auth_token, generated on first use); a client of a ``ray start`` cluster
needs RAY_AUTH_MODE=token and that token.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger("zhcorpus")

LOOPBACK = "127.0.0.1"
# Ray's switch for "this machine runs no multi-node cluster": node address 127.0.0.1 is kept.
SINGLE_HOST_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
# The network interface torch.distributed's gloo and NCCL transports bind to in the workers.
COLLECTIVE_IFNAME_ENV = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
IFF_LOOPBACK = 0x8  # <linux/if.h>: the flag of a loopback interface in /sys/class/net/NAME/flags


def connect(address: str = "", cpus: float = 1.0, dashboard: bool = False) -> None:
    """Connect this process to Ray, once (a no-op when it already is): to ``address``, else to
    $RAY_ADDRESS, else to a new local Ray on 127.0.0.1 (``start_local_ray``) with at least
    ``cpus`` logical CPUs and, if ``dashboard``, the dashboard (Ray Train's state API needs it)."""
    import ray

    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS", "")
    if address:
        ray.init(address=address)
        return
    start_local_ray(cpus, dashboard)


def start_local_ray(cpus: float = 1.0, dashboard: bool = False) -> None:
    """Start a Ray on this machine and connect to it, every socket on 127.0.0.1. It gets
    max(cores, ``cpus``) logical CPUs: a local run may ask for more workers than cores (slower,
    still correct). Raises ``RuntimeError`` (after shutting it down) if Ray still placed the node
    on another address: a Ray version that ignores the switch must not listen beyond loopback
    unnoticed."""
    import ray

    num_cpus = max(os.cpu_count() or 1, int(math.ceil(cpus)))
    with _node_on_loopback(), _environment(dict.fromkeys(COLLECTIVE_IFNAME_ENV, loopback_interface())):
        ray.init(
            address="local",
            num_cpus=num_cpus,
            include_dashboard=dashboard,
            dashboard_host=LOOPBACK,
            _node_ip_address=LOOPBACK,
            configure_logging=False,
        )
    node_ip = ray.util.get_node_ip_address()
    if node_ip != LOOPBACK:
        ray.shutdown()
        raise RuntimeError(
            f"the local Ray started on {node_ip}, not {LOOPBACK}: {SINGLE_HOST_ENV}=0 "
            "no longer keeps it on loopback (see train/launch.py)"
        )
    log.info("local Ray on %s: %d CPUs, dashboard %s", LOOPBACK, num_cpus, "on" if dashboard else "off")


def loopback_interface() -> str | None:
    """The name of this host's loopback network interface (Linux: ``lo``), None where
    /sys/class/net does not say (the collectives then choose as they would)."""
    for flags in sorted(Path("/sys/class/net").glob("*/flags")):
        with contextlib.suppress(OSError, ValueError):
            if int(flags.read_text(), 16) & IFF_LOOPBACK:
                return flags.parent.name
    return None


@contextlib.contextmanager
def _node_on_loopback() -> Iterator[None]:
    """The single-host switch, for the span of ``ray.init``: in the environment (``_environment``)
    and in this process's copy of Ray's constant, which Ray reads once at import (this process may
    have imported Ray before). Restored afterwards."""
    from ray._private import ray_constants

    saved = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        with _environment({SINGLE_HOST_ENV: "0"}):
            yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved


@contextlib.contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    """``values`` (those not None) in os.environ for the span of the block: the GCS, raylet,
    agents and dashboard inherit it when ``ray.init`` spawns them, the workers inherit the
    raylet's. Restored afterwards, so a later connection of this process to a real cluster, or
    anything else it starts, is not affected."""
    values = {k: v for k, v in values.items() if v is not None}
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

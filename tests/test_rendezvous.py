"""train/rendezvous.py: the rendezvous store listens on the master address only.

* Two processes on 127.0.0.1 (gloo): rank 0's store socket is on 127.0.0.1:port and rank 0 holds
  no wildcard listener, while an all-reduce over the group gives the right sum. The control: the
  same two processes through torch's own ``tcp://127.0.0.1:port`` rendezvous, whose store torch
  binds to every interface (what the module exists for; if a torch release stops doing that, the
  control fails and says so).
* On a local Ray (``slow``): a ``TorchTrainer`` with ``BoundStoreTorchConfig`` at 2 workers; rank
  0's store is on ``MASTER_ADDR`` (the node's address), not ``*``; rank 1 dies on the first
  attempt, and the restarted group rendezvous again, on a new socket bound the same way.

Listening sockets are read from /proc (tests/cluster_fixture.py).
"""

from __future__ import annotations

import json
import multiprocessing
import os
from datetime import timedelta

import pytest

from tests.cluster_fixture import free_port, listeners

TIMEOUT = timedelta(seconds=60)


def _rank(rank: int, world: int, ports, results, bound_store: bool) -> None:
    """One rank: rendezvous, all-reduce ``rank + 1``, report rank 0's listeners, tear down."""
    import torch
    import torch.distributed as dist

    from train.rendezvous import bind_listener, init_world

    if bound_store:
        if rank == 0:
            sock = bind_listener("127.0.0.1")
            port = sock.getsockname()[1]
            for _ in range(world - 1):
                ports.put(port)
            init_world("gloo", 0, world, "127.0.0.1", port, TIMEOUT, listen_fd=sock.detach())
        else:
            port = ports.get(timeout=60)
            init_world("gloo", rank, world, "127.0.0.1", port, TIMEOUT)
    else:  # torch's own rendezvous: rank 0's TCPStore binds the port itself
        port = ports.get(timeout=60)
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, timeout=TIMEOUT
        )
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    if rank == 0:
        held = [(s.address, s.port, s.kind) for s in listeners([os.getpid()]) if s.proto == "tcp"]
        results.put({"port": port, "sum": total.item(), "listeners": held})
    dist.barrier()  # before destroy: a peer must not find the store gone
    dist.destroy_process_group()


def run_world(world: int, bound_store: bool) -> dict:
    ctx = multiprocessing.get_context("spawn")
    ports, results = ctx.Queue(), ctx.Queue()
    if not bound_store:
        port = free_port()
        for _ in range(world):
            ports.put(port)
    procs = [ctx.Process(target=_rank, args=(r, world, ports, results, bound_store)) for r in range(world)]
    for p in procs:
        p.start()
    try:
        report = results.get(timeout=120)
    finally:
        for p in procs:
            p.join(timeout=60)
    assert [p.exitcode for p in procs] == [0] * world
    return report


def test_rank0_serves_the_store_on_the_master_address_only():
    report = run_world(2, bound_store=True)
    assert report["sum"] == 1 + 2
    store = [(addr, kind) for addr, port, kind in report["listeners"] if port == report["port"]]
    assert store == [("127.0.0.1", "loopback")], report
    wildcard = [held for held in report["listeners"] if held[2] != "loopback"]
    assert not wildcard, f"rank 0 listens beyond loopback: {wildcard}"


def test_control_torchs_own_store_binds_every_interface():
    report = run_world(2, bound_store=False)
    assert report["sum"] == 1 + 2
    store = {kind for addr, port, kind in report["listeners"] if port == report["port"]}
    assert store == {"wildcard"}, (
        f"torch's TCPStore no longer binds *:port: train/rendezvous.py may be unnecessary now ({report})"
    )


def test_rank0_alone_serves_the_store():
    from train.rendezvous import init_world

    with pytest.raises(ValueError, match="only rank 0"):
        init_world("gloo", 1, 2, "127.0.0.1", free_port(), TIMEOUT, listen_fd=3)
    with pytest.raises(ValueError, match="only rank 0"):
        init_world("gloo", 0, 2, "127.0.0.1", free_port(), TIMEOUT)  # torch would bind *:port


# --- on a local Ray ---------------------------------------------------------------------------------


def record_store(out_dir: str, crash_rank: int):
    """A train loop: each rank writes MASTER_ADDR/PORT and the listeners on that port held by
    rank 0's process to OUT_DIR/attempt-A-rank-R.json; ``crash_rank`` dies after writing, on the
    first attempt only."""

    def loop(config):
        import json
        import os

        import ray.train
        import torch
        import torch.distributed as dist

        from tests.cluster_fixture import listeners

        rank = ray.train.get_context().get_world_rank()
        attempt = 1 + sum(1 for _ in os.scandir(out_dir)) // 2
        total = torch.tensor([1.0])
        dist.all_reduce(total)
        addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
        held = [[s.address, s.kind] for s in listeners([os.getpid()]) if s.proto == "tcp" and s.port == port]
        dist.barrier()
        with open(os.path.join(out_dir, f"attempt-{attempt}-rank-{rank}.json"), "w") as f:
            json.dump({"addr": addr, "port": port, "sum": total.item(), "held": held}, f)
        dist.barrier()  # both files written before the crash, so the attempt count is right
        if rank == crash_rank and attempt == 1:
            os._exit(1)
        ray.train.report({"done": 1})

    return loop


@pytest.mark.slow
def test_ray_train_group_serves_the_store_on_the_node_address_and_rejoins(tmp_path):
    import ray
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    from train.job import RaySection, init_ray
    from train.rendezvous import BoundStoreTorchConfig

    out = tmp_path / "records"
    out.mkdir()
    init_ray(RaySection(dashboard=False), num_workers=2)
    try:
        node = ray.util.get_node_ip_address()
        TorchTrainer(
            record_store(str(out), crash_rank=1),
            torch_config=BoundStoreTorchConfig(),
            scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
            run_config=RunConfig(storage_path=str(tmp_path / "ray"), failure_config=FailureConfig(max_failures=1)),
        ).fit()
    finally:
        ray.shutdown()
    records = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
    assert sorted(records) == ["attempt-1-rank-0", "attempt-1-rank-1", "attempt-2-rank-0", "attempt-2-rank-1"]
    for attempt in (1, 2):
        r0, r1 = records[f"attempt-{attempt}-rank-0"], records[f"attempt-{attempt}-rank-1"]
        assert r0["sum"] == r1["sum"] == 2
        assert r0["addr"] == r1["addr"] == node and r0["port"] == r1["port"]
        assert r0["held"] == [[node, "loopback" if node.startswith("127.") else "address"]], r0
        assert r1["held"] == [], r1  # clients only

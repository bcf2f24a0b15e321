"""Hybrid parallelism against the single-process model: every layout trains the same.

(FSDP2 on four processes, alone and with tensor and pipeline parallelism: ``tests/test_fsdp.py``,
which reuses this file's reference and runner.)

Each layout runs 5 optimizer steps of the ``debug`` GPT (vocabulary 1001, which no tp > 1
divides, padded to 1008) on the same global batches, in ``mp.spawn`` processes over gloo; the
per-step losses and the final parameters must match a plain single-process reference (the whole
global batch in one forward, ``torch.optim.AdamW``, ``clip_grad_norm_``) to 1e-5 relative.
One run saves a DCP checkpoint at tp=2 and others resume it at pp=2 and under FSDP2 at dp=2
(model and optimizer state resharded, ZeRO-1 to FSDP2). Compiled cases use the aot_eager backend.
Layouts that share a world size run in one spawn, to pay the start-up once.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from dataclasses import dataclass

import pytest
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp

from train.config import TrainConfig
from train.layout import LayoutError, ParallelConfig, at_world_size, elastic_problems, validate
from train.model import build_model, preset
from train.parallel.step import Trainer, cross_entropy
from train.parallel.zero import local_tensor

CFG = preset("debug")
TRAIN = TrainConfig(global_batch=8, micro_batch=2, lr=1e-3, grad_clip=1.0, seed=0)
STEPS = 5
RESUME_AT = 3  # checkpoint cases save after this many steps; the resumed run does the rest
RTOL = 1e-5  # per step for losses; per tensor, ||p - p_ref|| / ||p_ref||, for parameters
ELEMENT_RTOL = 1e-4  # max |p - p_ref| / max |p_ref|: Adam divides by sqrt(v), so an element whose
# gradient is near 0 turns summation-order rounding into a visible update


@dataclass(frozen=True)
class Case:
    name: str
    par: ParallelConfig
    perturb: bool = False  # add noise to one rank's gradient: the check must catch it
    precision: str = "fp32"
    compile: bool = False  # torch.compile per block, with the aot_eager backend (no C++ build)
    save_to: str = ""  # DCP-save the state after RESUME_AT steps under this name
    resume_from: str = ""  # DCP-load that state and run only the steps after RESUME_AT


WORLD2 = [
    Case("tp2", ParallelConfig(tp=2), save_to="tp2"),
    Case("tp2_sp_selective", ParallelConfig(tp=2, sequence_parallel=True, recompute="selective")),
    Case("pp2_gpipe", ParallelConfig(pp=2, schedule="gpipe")),
    Case("pp2_1f1b_full", ParallelConfig(pp=2, schedule="1f1b", recompute="full")),
    Case("pp2_interleaved", ParallelConfig(pp=2, virtual_stages=2, schedule="interleaved_1f1b")),
    Case("dp2_zero1", ParallelConfig(dp=2)),
    Case("dp2_none", ParallelConfig(dp=2, dp_shard="none")),
    Case("dp2_perturbed", ParallelConfig(dp=2), perturb=True),
    Case("pp2_resumed_from_tp2", ParallelConfig(pp=2), resume_from="tp2"),
    Case("pp2_bf16", ParallelConfig(pp=2), precision="bf16"),
    Case("dp2_fsdp", ParallelConfig(dp=2, dp_shard="fsdp")),
    Case("dp2_fsdp_full_compiled", ParallelConfig(dp=2, dp_shard="fsdp", recompute="full"), compile=True),
    Case("dp2_fsdp_resumed_from_tp2", ParallelConfig(dp=2, dp_shard="fsdp"), resume_from="tp2"),
]
WORLD8 = [
    Case("tp2_pp2_dp2", ParallelConfig(tp=2, pp=2, dp=2)),
    Case(
        "tp2_pp2_dp2_interleaved_sp",
        ParallelConfig(tp=2, pp=2, dp=2, virtual_stages=2, schedule="interleaved_1f1b", sequence_parallel=True),
    ),
    Case("tp2_pp2_dp2_fsdp", ParallelConfig(tp=2, pp=2, dp=2, dp_shard="fsdp")),
]


def batches() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1234)
    return [torch.randint(0, CFG.vocab_size, (TRAIN.global_batch, CFG.seq_len + 1), generator=g) for _ in range(STEPS)]


def reference() -> tuple[list[float], dict[str, torch.Tensor]]:
    """The single-process run: whole global batch per forward, stock AdamW and clipping."""
    model = build_model(CFG, TRAIN.seed)
    params = list(model.parameters())
    opt = torch.optim.AdamW(
        [
            {"params": [p for p in params if p.ndim >= 2], "weight_decay": TRAIN.weight_decay},
            {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0},
        ],
        lr=TRAIN.lr,
        betas=(TRAIN.beta1, TRAIN.beta2),
        eps=TRAIN.eps,
    )
    losses = []
    for t in batches():
        loss = cross_entropy(model(t[:, :-1]), t[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, TRAIN.grad_clip)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses, {n: p.detach().clone() for n, p in model.named_parameters()}


def _full_params(trainer: Trainer) -> dict[str, torch.Tensor]:
    """Every parameter this rank holds, unsharded over tp (a collective over tp)."""
    out = {}
    for name, p in trainer.named_parameters():
        out[name] = (p.full_tensor() if hasattr(p, "full_tensor") else p).detach().clone()
    return out


def _perturb(trainer: Trainer) -> None:
    if dist.get_rank() == 1:
        w = trainer.parts[0].layers["0"].mlp.w1.weight
        w.register_hook(lambda g: g + 1e-4 * torch.randn_like(g))


def _run_case(case: Case, out: str) -> None:
    train = dataclasses.replace(TRAIN, precision=case.precision, compile=case.compile, compile_backend="aot_eager")
    trainer = Trainer(CFG, case.par, train, "cpu")
    data = batches()
    if case.resume_from:
        sd = trainer.state_dict()
        dcp.load(sd, checkpoint_id=f"{out}/ckpt_{case.resume_from}")
        trainer.load_state_dict(sd)
        data = data[RESUME_AT:]
    if case.perturb:
        _perturb(trainer)
    losses = []
    for step, tokens in enumerate(data, start=1):
        losses.append(trainer.train_step(tokens))
        if case.save_to and step == RESUME_AT:
            dcp.save(trainer.state_dict(), checkpoint_id=f"{out}/ckpt_{case.save_to}")
    result = {
        "losses": losses,
        "params": _full_params(trainer),
        "state_numel": trainer.optimizer.state_numel(),
        "param_numel": sum(local_tensor(p).numel() for _, p in trainer.named_parameters()),
    }
    if trainer.tp_rank == 0 and trainer.dp_rank == 0 or case.name.startswith("dp2"):
        torch.save(result, f"{out}/{case.name}.rank{dist.get_rank()}.pt")
    dist.barrier()


def _worker(rank: int, world: int, port: int, cases: list[Case], out: str) -> None:
    torch.set_num_threads(1)  # 2 cores shared by every rank
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        for case in cases:
            _run_case(case, out)
        dist.barrier()  # nobody tears down while a peer still talks
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(world: int, cases: list[Case], out: str) -> dict[str, list[dict]]:
    mp.spawn(_worker, args=(world, _free_port(), cases, out), nprocs=world)
    results: dict[str, list[dict]] = {}
    for f in sorted(os.listdir(out)):
        if f.endswith(".pt"):
            results.setdefault(f.split(".rank")[0], []).append(torch.load(f"{out}/{f}"))
    return results


@pytest.fixture(scope="module")
def ref():
    return reference()


@pytest.fixture(scope="module")
def world2(tmp_path_factory):
    return _spawn(2, WORLD2, str(tmp_path_factory.mktemp("world2")))


@pytest.fixture(scope="module")
def world8(tmp_path_factory):
    return _spawn(8, WORLD8, str(tmp_path_factory.mktemp("world8")))


def parity_errors(results: list[dict], ref) -> tuple[float, float, float]:
    """Worst (relative loss error over the steps run, norm-relative parameter error,
    element-wise parameter error relative to the tensor's largest value).

    A pipeline's last stage holds its own copy of the tied embedding as ``output.weight``: it is
    compared with the reference embedding too, which checks the copies stayed in sync."""
    ref_losses, ref_params = ref
    losses = results[0]["losses"]
    ref_losses = ref_losses[len(ref_losses) - len(losses) :]
    loss_err = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses, strict=True))
    params: dict[str, torch.Tensor] = {}
    for r in results:
        params.update(r["params"])
    expected = dict(ref_params)
    if "output.weight" in params:
        expected["output.weight"] = ref_params["embed.tok.weight"]
    assert set(params) == set(expected), "every parameter of the model, held by some rank"
    diff = {n: params[n] - expected[n] for n in expected}
    norm_err = max((diff[n].norm() / expected[n].norm()).item() for n in expected)
    elem_err = max((diff[n].abs().max() / expected[n].abs().max()).item() for n in expected)
    return loss_err, norm_err, elem_err


def assert_parity(results: list[dict], ref) -> None:
    loss_err, norm_err, elem_err = parity_errors(results, ref)
    assert loss_err < RTOL and norm_err < RTOL and elem_err < ELEMENT_RTOL, (loss_err, norm_err, elem_err)


@pytest.mark.parametrize("name", [c.name for c in WORLD2 if not c.perturb and c.precision == "fp32"])
def test_two_rank_layouts_match_single_process(world2, ref, name):
    assert_parity(world2[name], ref)


@pytest.mark.parametrize("name", [c.name for c in WORLD8])
def test_tp_pp_dp_2x2x2_matches_single_process(world8, ref, name):
    assert_parity(world8[name], ref)


def test_parity_check_catches_one_perturbed_rank(world2, ref):
    _, norm_err, _ = parity_errors(world2["dp2_perturbed"], ref)
    assert norm_err > 100 * RTOL


def test_bf16_autocast_follows_the_fp32_loss_curve(world2, ref):
    """bf16 autocast (the GPU setting; CPU autocast runs the same code path) stays close."""
    losses = world2["pp2_bf16"][0]["losses"]
    assert losses == pytest.approx(ref[0], rel=1e-2)
    assert losses != pytest.approx(ref[0], rel=1e-6)  # it did run in bf16


def test_zero1_shards_the_optimizer_state_over_dp_and_none_replicates_it(world2):
    n = sum(p.numel() for p in build_model(CFG, 0).parameters())
    per_rank = [r["state_numel"] for r in world2["dp2_zero1"]]
    assert len(per_rank) == 2 and all(3 * n / 2 <= s <= 3 * n / 2 + 3 * 4 for s in per_rank), (per_rank, n)
    assert [r["param_numel"] for r in world2["dp2_zero1"]] == [n, n]  # every replica holds all the weights
    assert [r["state_numel"] for r in world2["dp2_none"]] == [3 * n, 3 * n]  # dp_shard="none": nothing sharded


def test_fsdp_shards_weights_and_optimizer_state_over_dp(world2):
    """FSDP2 splits each parameter's rows over dp (torch.chunk: an odd row count leaves one rank a
    row more), so each rank holds about half of the weights and of the optimizer state."""
    n = sum(p.numel() for p in build_model(CFG, 0).parameters())
    params = [r["param_numel"] for r in world2["dp2_fsdp"]]
    assert sum(params) == n and all(0.45 * n <= p <= 0.55 * n for p in params), (params, n)
    assert [r["state_numel"] for r in world2["dp2_fsdp"]] == [3 * p for p in params]


@pytest.mark.parametrize(
    "par, world, match",
    [
        (ParallelConfig(tp=2, pp=2, dp=1), 8, r"tp\*pp\*dp = 2\*2\*1 = 4 does not equal the world size 8"),
        (ParallelConfig(tp=3), 3, r"n_heads=4 does not divide by tp=3"),
        (ParallelConfig(pp=3), 3, r"n_layers=4 does not divide into pp\*virtual_stages"),
        (ParallelConfig(pp=2, virtual_stages=3, schedule="interleaved_1f1b"), 2, r"pp\*virtual_stages = 2\*3 = 6"),
        (ParallelConfig(pp=2, virtual_stages=2), 2, r"virtual_stages=2 needs schedule 'interleaved_1f1b'"),
        (ParallelConfig(pp=4, dp=2), 8, r"2 micro-batches per step < pp=4"),
        (ParallelConfig(schedule="zigzag"), 1, r"unknown pipeline schedule 'zigzag'"),
        (ParallelConfig(recompute="most"), 1, r"recompute must be one of none, selective, full"),
        (ParallelConfig(dp=3), 3, r"global_batch=8 sequences do not split into dp=3"),
    ],
)
def test_layout_validator_rejects_bad_layouts(par, world, match):
    with pytest.raises(LayoutError, match=match):
        validate(par, CFG, world, TRAIN.global_batch, TRAIN.micro_batch)


def test_layout_validator_asks_for_vocabulary_padding():
    unpadded = CFG.replace(vocab_multiple=1)  # 1001 rows
    with pytest.raises(LayoutError, match=r"1001 rows does not divide by tp=2; set model.vocab_multiple"):
        validate(ParallelConfig(tp=2), unpadded, 2, 8, 2)
    validate(ParallelConfig(tp=2), CFG, 2, 8, 2)  # padded to 1008: fine


def test_layout_validator_lists_every_problem():
    with pytest.raises(LayoutError) as e:
        validate(ParallelConfig(tp=3, pp=3), CFG, 4, 8, 2)
    assert str(e.value).count("\n  - ") == 4  # world size, heads, ffn (1008 rows divide by 3), layers


def test_an_elastic_layout_shrinks_dp_only_and_checks_every_dp_it_may_take():
    par = ParallelConfig(tp=2, dp=4)
    assert at_world_size(par, 4) == dataclasses.replace(par, dp=2)
    assert at_world_size(par, 8) == par
    with pytest.raises(LayoutError, match=r"3 workers do not form whole tp\*pp = 2\*1 = 2 groups"):
        at_world_size(par, 3)
    # Ray Train may start 3 or 5 workers of a tp=2 layout: only tp = pp = 1 may shrink
    assert "an elastic run needs tp = pp = 1, not tp=2 pp=1" in elastic_problems(par, CFG, 2, 12, 1)[0]
    assert elastic_problems(par, CFG, 8, 12, 1) == []  # the minimum is the layout: nothing shrinks
    pure = ParallelConfig(dp=4)
    assert elastic_problems(pure, CFG, 1, 12, 1) == []  # dp 1, 2, 3 and 4 all split 12 sequences
    assert elastic_problems(pure, CFG, 1, 8, 2) == [  # dp=3 does not split 8 into micro-batches of 2
        "at dp=3: global_batch=8 sequences do not split into dp=3 replicas of micro-batches of 2"
    ]
    for bad in (0, 5):
        assert "must be between 1 and the layout's 4 workers" in elastic_problems(pure, CFG, bad, 8, 1)[0]
    hsdp = ParallelConfig(dp=4, dp_shard="fsdp", dp_replicate=2)  # dp=3 and 1 cannot hold 2 replicas
    assert [p.split(":")[0] for p in elastic_problems(hsdp, CFG, 1, 12, 1)] == ["at dp=1", "at dp=3"]

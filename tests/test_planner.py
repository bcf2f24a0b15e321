"""Layout planner: formulas against the papers' closed forms, published layouts, rejections."""

import dataclasses
import json
import math

import pytest

from jobs import plan_layout
from jobs.config import ConfigError
from train.config import TrainConfig
from train.layout import validate
from train.planner import (
    GIB,
    PLAN_PARALLEL,
    PLAN_TRAIN,
    Cluster,
    activation_bytes_per_layer,
    bubble_fraction,
    evaluate,
    flops_per_iteration,
    layer_params,
    parse_degrees,
    plan,
    total_params,
)
from train.shapes import PRESETS, ModelConfig


def batch(global_batch: int = 512, micro_batch: int = 1) -> TrainConfig:
    """The ``[train]`` section's batch sizes, all the planner reads of it."""
    return TrainConfig(global_batch=global_batch, micro_batch=micro_batch)


def layout(tp: int = 1, pp: int = 1, dp: int = 1, **keys):
    """A ``[parallel]`` section on the planner's defaults (selective recomputation, sequence
    parallelism, ZeRO-1)."""
    return dataclasses.replace(PLAN_PARALLEL, tp=tp, pp=pp, dp=dp, **keys)


# Yuan 1.0 245B (arXiv 2110.04725): 76 layers, hidden 16384, sequence 2048, global batch 3360,
# micro-batch 1, t=8 p=38 d=7 on 2128 GPUs (266 servers x 8 A100). The heads (128) and the
# vocabulary (53,005, which brings the count to the paper's 245.7B) are our assumptions; the
# released Yuan Megatron scripts train with --checkpoint-activations (full recompute), fp16, no ZeRO.
YUAN = ModelConfig(
    n_layers=76, dim=16384, n_heads=128, ffn_dim=4 * 16384, vocab_size=53_005, seq_len=2048, query_layer=False
)
YUAN_CLUSTER = Cluster(gpus=2128, gpus_per_node=8, gpu_mem_gb=80.0)
YUAN_TRAIN = batch(3360)
YUAN_LAYOUT = layout(8, 38, 7, recompute="full", dp_shard="none", sequence_parallel=False)

# PanGu-α 200B (arXiv 2104.12369): 2048 Ascend 910 (32 GB HBM, 256 TFLOPS fp16), 16 pipeline
# stages, 8-way op-level model parallelism, optimizer model parallelism (= ZeRO-1 over d=16),
# rematerialization. The global batch (512 sequences) is our assumption.
PANGU_CLUSTER = Cluster(gpus=2048, gpus_per_node=8, gpu_mem_gb=32.0, peak_tflops=256.0)
PANGU_LAYOUT = layout(8, 16, 16, recompute="full", dp_shard="zero1", sequence_parallel=False)


@pytest.mark.parametrize("name, paper", [("2.6B", 2.6e9), ("13B", 13.1e9), ("200B", 207.0e9)])
def test_preset_parameter_counts_match_pangu_table_1(name, paper):
    assert total_params(PRESETS[name]) == pytest.approx(paper, rel=0.05)


def test_yuan_parameter_count_matches_the_paper():
    assert total_params(YUAN) == pytest.approx(245.7e9, rel=0.01)


@pytest.mark.parametrize("name", ["350M", "2.6B", "13B"])
def test_parameter_count_matches_the_torch_model(name):
    torch = pytest.importorskip("torch")
    from train.model import GPT, num_params

    with torch.device("meta"):  # shapes only, no memory
        n = num_params(GPT(PRESETS[name]))
    # The model drops the key bias (h per block); everything else is the same formula.
    assert total_params(PRESETS[name]) == pytest.approx(n, rel=1e-3)


def test_layer_params_is_megatrons_12h2_plus_13h():
    h = 5120
    assert layer_params(ModelConfig(n_layers=1, dim=h, n_heads=40, ffn_dim=4 * h)) == 12 * h * h + 13 * h


def test_flops_equal_narayanan_eq_3():
    B, s, l, h, V = 64, 2048, 24, 2048, 51_200  # noqa: E741 (the paper's symbols); V a multiple of 128: no padding
    shape = ModelConfig(n_layers=l, dim=h, n_heads=16, ffn_dim=4 * h, vocab_size=V, seq_len=s, query_layer=False)
    eq3 = B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
    assert flops_per_iteration(shape, B, "full") == pytest.approx(96 * eq3, rel=1e-12)
    # Without recomputation only the blocks lose their re-run forward (96 -> 72); the logit layer
    # was never recomputed, so it keeps its 6BshV (the "72 * eq. 3" shorthand scales it by 3/4 too).
    no_recompute = 72 * B * s * l * h * h * (1 + s / (6 * h)) + 6 * B * s * h * V
    assert flops_per_iteration(shape, B, "none") == pytest.approx(no_recompute, rel=1e-12)


def test_activation_bytes_equal_korthikanti_table_2():
    s, b, h, a, t = 2048, 1, 12288, 96, 8  # GPT-3 175B
    shape = ModelConfig(n_layers=96, dim=h, n_heads=a, ffn_dim=4 * h, vocab_size=51_200, seq_len=s, query_layer=False)
    sbh = s * b * h
    assert activation_bytes_per_layer(shape, b, 1, "none", sp=False) == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert activation_bytes_per_layer(shape, b, t, "none", sp=False) == pytest.approx(
        sbh * (10 + 24 / t + 5 * a * s / (h * t))
    )
    assert activation_bytes_per_layer(shape, b, t, "none", sp=True) == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    assert activation_bytes_per_layer(shape, b, t, "selective", sp=True) == pytest.approx(34 * sbh / t)
    assert activation_bytes_per_layer(shape, b, t, "full", sp=False) == pytest.approx(2 * sbh)


def test_bubble_is_p_minus_1_over_m():
    assert bubble_fraction(8, 32) == 7 / 32
    assert bubble_fraction(8, 32, virtual_stages=4) == 7 / 128
    e = evaluate(PRESETS["13B"], Cluster(gpus=64), batch(512), layout(4, 4, 4))
    assert e.micro_batches == 128 and e.bubble == 3 / 128


def test_yuan_layout_is_feasible():
    e = evaluate(YUAN, YUAN_CLUSTER, YUAN_TRAIN, YUAN_LAYOUT)
    assert e.feasible, e.problems
    assert e.micro_batches == 480
    assert e.links["tp"] == "nvlink"


def test_pangu_200b_layout_is_feasible():
    e = evaluate(PRESETS["200B"], PANGU_CLUSTER, batch(512), PANGU_LAYOUT)
    assert e.feasible, e.problems
    assert e.memory.total < 32


def test_layout_over_memory_is_rejected_with_a_memory_reason():
    # 13B on 8 x 80 GB, pure data parallel, no optimizer sharding: 16 bytes x 13B = 210 GB per GPU.
    e = evaluate(PRESETS["13B"], Cluster(gpus=8, gpu_mem_gb=80.0), batch(), layout(1, 1, 8, dp_shard="none"))
    assert not e.feasible
    assert len(e.problems) == 1 and e.problems[0].startswith("memory:")
    assert e.memory.total > 200


def test_optimizer_sharding_divides_the_optimizer_state():
    shape = PRESETS["13B"]
    replicated = evaluate(shape, Cluster(gpus=64), batch(), layout(8, 1, 8, dp_shard="none")).memory
    sharded = evaluate(shape, Cluster(gpus=64), batch(), layout(8, 1, 8, dp_shard="zero1")).memory
    assert sharded.optimizer == pytest.approx(replicated.optimizer / 8)
    assert sharded.weights == replicated.weights


def test_fsdp_divides_weights_gradients_and_optimizer_state_by_dp():
    """13B at tp=8, dp=8 (pp=1): ZeRO-1 keeps 2 + 2 bytes of every tp-local parameter; FSDP2
    keeps (12 + 4)/8 of them plus two gathered blocks' bf16 weights and one block's gradients, and
    gathers every micro-batch; with fsdp_grad_sync="last" it holds all the bf16 weights and fp32
    unsharded gradients and gathers once a step."""
    shape = PRESETS["13B"]
    zero1 = evaluate(shape, Cluster(gpus=64), batch(), layout(8, 1, 8))
    fsdp = evaluate(shape, Cluster(gpus=64), batch(), layout(8, 1, 8, dp_shard="fsdp"))
    P = zero1.memory.weights / 2  # GiB per byte-per-parameter: the tp-local parameters on the stage
    block = layer_params(shape) / 8 / GIB
    assert fsdp.memory.optimizer == pytest.approx(zero1.memory.optimizer) == pytest.approx(12 * P / 8)
    assert fsdp.memory.weights == pytest.approx(2 * 2 * block)
    assert fsdp.memory.grads == pytest.approx(4 * P / 8 + 2 * block)
    assert fsdp.memory.total < zero1.memory.total - 3 * P  # 4P -> about P/2 + 3 blocks
    m = 512 // 8  # micro-batches a step (global batch 512, dp 8, micro-batch 1)
    assert fsdp.comm_gb["dp"] == pytest.approx(1.5 * m * zero1.comm_gb["dp"])  # gathered twice a micro-batch
    last = evaluate(shape, Cluster(gpus=64), batch(), layout(8, 1, 8, dp_shard="fsdp", fsdp_grad_sync="last"))
    assert last.comm_gb["dp"] == pytest.approx(1.5 * zero1.comm_gb["dp"])  # once a step
    assert (last.memory.weights, last.memory.grads) == pytest.approx((2 * P, 4 * P / 8 + 4 * P))
    piped = evaluate(shape, Cluster(gpus=64), batch(), layout(8, 2, 4, dp_shard="fsdp")).memory
    assert piped.weights == pytest.approx(evaluate(shape, Cluster(gpus=64), batch(), layout(8, 2, 4)).memory.weights)


def test_tensor_parallel_wider_than_a_node_ranks_below_in_node():
    shape = ModelConfig(
        n_layers=32, dim=8192, n_heads=64, ffn_dim=4 * 8192, vocab_size=40_000, seq_len=2048, query_layer=False
    )
    feasible, _ = plan(shape, Cluster(gpus=64, gpus_per_node=8), batch(256))
    ranked = [e.layout.tp for e in feasible]
    assert 16 in ranked and ranked[0] <= 8
    wide = next(e for e in feasible if e.layout.tp == 16)
    assert wide.links["tp"] == "ib"
    assert all(e.step_s < wide.step_s for e in feasible if e.layout.tp == 8 and e.layout.pp == wide.layout.pp)


def test_ranking_is_by_step_time():
    feasible, _ = plan(PRESETS["13B"], Cluster(gpus=64), PLAN_TRAIN)
    assert [e.step_s for e in feasible] == sorted(e.step_s for e in feasible)
    assert all(e.memory.total <= 80 for e in feasible)


def test_invalid_layouts_name_their_reasons():
    shape, cluster = PRESETS["13B"], Cluster(gpus=64)
    problems = evaluate(shape, cluster, batch(), layout(16, 2, 2)).problems
    assert problems == ("n_heads=40 does not divide by tp=16 (each tp rank runs whole heads)",)
    problems = evaluate(shape, cluster, batch(), layout(2, 3, 10)).problems
    assert any(p.startswith("tp*pp*dp = 2*3*10 = 60 does not equal the world size 64") for p in problems)
    assert any(p.startswith("n_layers=40 does not divide into pp*virtual_stages") for p in problems)
    problems = evaluate(shape, cluster, batch(16), layout(1, 8, 8)).problems
    assert problems == (
        "2 micro-batches per step < pp=8: the pipeline could never fill; raise global_batch or lower micro_batch",
    )


def test_the_planner_asks_the_runtimes_layout_questions():
    """The planner's partition checks are ``train.layout``'s: interleaved 1F1B with 6 micro-batches
    on pp=4 runs in one round (torch's rule, m % (m // pp)); the planner's old rule (m % pp)
    refused it. Every layout the planner ranks is a ``[parallel]`` section the runtime validates."""
    shape = PRESETS["13B"].replace(n_layers=48)
    interleaved = {"virtual_stages": 2, "schedule": "interleaved_1f1b"}
    assert evaluate(shape, Cluster(gpus=256), batch(48), layout(8, 4, 8, **interleaved)).problems == ()  # m = 6
    feasible, infeasible = plan(shape, Cluster(gpus=64), batch(64), layout(dp_shard="fsdp", **interleaved))
    assert feasible and infeasible
    for e in feasible:
        assert (e.layout.dp_shard, e.layout.schedule) == ("fsdp", "interleaved_1f1b")
        validate(e.layout, shape, 64, 64, 1)
    # the runtime's own refusal, with its fix, for virtual stages without the interleaved schedule
    lone = evaluate(shape, Cluster(gpus=256), batch(48), layout(8, 4, 8, virtual_stages=2)).problems
    assert lone == ("virtual_stages=2 needs schedule 'interleaved_1f1b', not '1f1b'",)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: ModelConfig(n_layers=40, dim=5120, n_heads=48, ffn_dim=20480), "not divisible"),
        (lambda: Cluster(gpus=0), "gpus must be >= 1"),
        (lambda: Cluster(dp_exposed=1.5), "dp_exposed must be in"),
        (lambda: parse_degrees("8,2"), "tp,pp,dp"),
        (lambda: ModelConfig.from_preset("13x"), "unknown model preset"),
    ],
)
def test_invalid_inputs_raise_clear_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize(
    "keys, message",
    [
        ({"recompute": "half"}, "recompute must be one of none, selective, full"),
        ({"dp_shard": "zero2"}, "dp_shard must be one of none, zero1, fsdp"),
        ({"fsdp_grad_sync": "last"}, "fsdp_grad_sync='last' needs dp_shard='fsdp'"),
    ],
)
def test_invalid_parallel_keys_are_the_runtimes_problems(keys, message):
    problems = evaluate(PRESETS["13B"], Cluster(gpus=64), batch(), layout(8, 2, 4, **keys)).problems
    assert any(p.startswith(message) for p in problems), problems


def test_cli_check_exit_codes(capsys):
    assert plan_layout.main(["--model", "13b", "--gpus", "8", "--dp-shard", "none", "--check", "1,1,8"]) == 1
    assert "memory: " in capsys.readouterr().out
    assert plan_layout.main(["--model", "13b", "--gpus", "64", "--check", "8,2,4"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("feasible")
    assert plan_layout.main(["--model", "13b", "--heads", "48"]) == 2
    assert "dim=5120 is not divisible by n_heads=48" in capsys.readouterr().err


def test_cli_ranks_and_prints_json(capsys):
    argv = ["--model", "13b", "--gpus", "64", "--gpus-per-node", "8", "--gpu-mem-gb", "80", "--top", "5", "--json"]
    assert plan_layout.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    steps = [e["step_s"] for e in out["feasible"]]
    assert len(steps) == 5 and steps == sorted(steps)
    first = out["feasible"][0]
    assert math.prod(first["layout"].values()) == 64 and first["memory"]["total"] <= 80


def test_cli_flags_are_config_overrides():
    args = plan_layout.parse_args(["--model", "2.6b", "--gpus", "16", "--set", "cluster.inter_node_gbps=50"])
    cfg = plan_layout.load(args)
    assert (cfg.model, cfg.cluster.gpus, cfg.cluster.inter_node_gbps) == (PRESETS["2.6B"], 16, 50.0)


def test_cli_model_section_is_the_models_config_on_the_default_preset():
    cfg = plan_layout.load(plan_layout.parse_args(["--layers", "48", "--no-query-layer"]))
    assert cfg.model == PRESETS["13B"].replace(n_layers=48, query_layer=False)
    cfg = plan_layout.load(plan_layout.parse_args(["--model", "2.6b", "--set", "model.n_heads=32"]))
    assert cfg.model == PRESETS["2.6B"].replace(n_heads=32)


@pytest.mark.parametrize(
    "old, new",
    [("layers", "n_layers"), ("hidden", "dim"), ("heads", "n_heads"), ("ffn", "ffn_dim"), ("vocab", "vocab_size")],
)
def test_the_planners_old_model_keys_name_the_new_ones(old, new):
    with pytest.raises(ConfigError, match=f"model.{old} was renamed: use model.{new}"):
        plan_layout.load(plan_layout.parse_args(["--set", f"model.{old}=8"]))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--zero", "3"], "--zero was replaced by --dp-shard (ZeRO stage 0: none, 1: zero1, 3: fsdp)"),
        (["--set", "training.zero=0"], "training.zero was renamed: use parallel.dp_shard"),
        (["--set", "training.global_batch=64"], "training.global_batch was renamed: use train.global_batch"),
        (["--set", "training.dp_exposed=0.5"], "training.dp_exposed was renamed: use cluster.dp_exposed"),
        (["--dp-shard", "zero3"], "parallel.dp_shard must be one of"),
    ],
)
def test_the_planners_old_training_keys_name_the_new_ones(capsys, argv, message):
    """The planner speaks the training job's vocabulary ([parallel] dp_shard, [train] batch sizes):
    its old [training] keys and --zero are refused in one line that names the new key."""
    assert plan_layout.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err, err


def test_a_plan_config_reads_the_training_jobs_sections(tmp_path):
    """A [parallel] / [train] written for jobs.train_lm plans as it trains: its dp_shard and batch."""
    toml = tmp_path / "plan.toml"
    toml.write_text('[parallel]\ndp_shard = "fsdp"\nrecompute = "full"\n[train]\nglobal_batch = 64\nlr = 3e-4\n')
    cfg = plan_layout.load(plan_layout.parse_args(["--config", str(toml), "--gpus", "16"]))
    assert (cfg.parallel.dp_shard, cfg.parallel.recompute, cfg.train.global_batch) == ("fsdp", "full", 64)
    assert cfg.parallel.sequence_parallel and cfg.train.micro_batch == 1  # the planner's defaults under it

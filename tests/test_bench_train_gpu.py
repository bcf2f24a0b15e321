"""bench.bench_train_gpu on CPU at the debug size: every variant runs, its figures follow from its
timings by the stated formulas, and in fp32 all three train the same model to the same loss."""

from __future__ import annotations

import pytest
import torch

from bench.bench_train_gpu import flops_per_token, main, peak_tflops
from train.shapes import preset


def test_flops_per_token_of_the_debug_model_by_hand():
    # 4 blocks + the query layer, s = 16, h = 32, f = 64, b = 1: forward 8sh^2 + 4shf + 4s^2h
    # = 131,072 + 131,072 + 32,768 = 294,912 per block, x3 with the backward; logits 6shV with
    # V = 1001 padded to 1024 (Megatron's multiple of 128) = 3,145,728; over 16 tokens.
    assert flops_per_token(preset("debug")) == (5 * 3 * 294_912 + 3_145_728) / 16


@pytest.mark.parametrize(
    "name, tflops",
    [
        ("NVIDIA H100 80GB HBM3", 989.0),
        ("NVIDIA H100 PCIe", 756.0),
        ("NVIDIA H200", 989.0),
        ("NVIDIA A100-SXM4-80GB", 312.0),
        ("NVIDIA GeForce RTX 4090", None),
    ],
)
def test_peak_by_device_name(name, tflops):
    assert peak_tflops(name) == tflops


def test_three_variants_on_cpu_train_the_same_model(tmp_path):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        report = main(
            [
                "--device",
                "cpu",
                "--preset",
                "debug",
                "--global-batch",
                "4",
                "--micro-batch",
                "2",
                "--steps",
                "2",
                "--warmup",
                "1",
                "--precision",
                "fp32",
                "--compile-backend",
                "eager",
                "--peak-tflops",
                "0.5",
                "--json",
                str(tmp_path / "bench.json"),
            ]
        )
    finally:
        torch.set_num_threads(threads)
    runs = report["variants"]
    assert list(runs) == ["plain", "trainer", "fsdp_compile"]
    tokens = 4 * 16
    for r in runs.values():
        assert r["tokens_per_s"] == pytest.approx(tokens / r["step_s"])
        assert r["mfu"] == pytest.approx(report["flops_per_token"] * r["tokens_per_s"] / 0.5e12)
        assert r["memory_gib"] > 0
    assert runs["plain"]["vs_plain"] == 1.0
    assert runs["fsdp_compile"]["compile_s"] > 0 and "compile_s" not in runs["trainer"]
    # 3 steps of the same seeded model on the same batches: the same last loss
    losses = [r["last_loss"] for r in runs.values()]
    assert losses == pytest.approx([losses[0]] * 3, rel=1e-5) and losses[0] < 7.0
    assert (tmp_path / "bench.json").exists()

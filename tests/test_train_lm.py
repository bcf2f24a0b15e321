"""jobs/train_lm.py on a local Ray: every layout, a killed worker and a resharded resume follow
the one-process loss curve; plus the checkpoint format, LR schedule and config, without Ray.

The Ray runs (``slow``) share one local Ray and four runs of the ``debug`` config, 8 steps,
checkpoints after steps 3, 6 and 8, validation at steps 4 and 8, on a small hand-written corpus:

* ``reference``: 1 worker;
* ``tp2_dp2``: 4 workers at (tp, pp, dp) = (2, 1, 2), keeping every checkpoint;
* ``killed``: 2 workers at dp=2 with FSDP2 and asynchronous checkpoints; on the first attempt
  only, rank 1 dies (``os._exit``) while step 6's checkpoint is being written in the background,
  and Ray restarts the group from the previous complete checkpoint, step 3;
* ``resharded``: 2 workers at pp=2, starting from ``tp2_dp2``'s step-3 checkpoint.

Each must log the reference's per-step losses (and validation losses) to 1e-5 relative.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import pickle
import random
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist

from jobs.config import ConfigError, load_config
from jobs.train_lm import CONFIGS
from tests import shard_fixture
from train import checkpoint
from train.config import TrainConfig
from train.job import RaySection, TrainLMConfig, init_ray, resolve, run
from train.loop import lr_at
from train.shapes import PRESETS, ModelConfig

RTOL = 1e-5
STEPS = 8
COMMON = [
    f"train.steps={STEPS}",
    "train.checkpoint_every=3",
    "train.eval_every=4",
    "train.warmup=2",
    "ray.dashboard=false",
    "ray.max_failures=1",
]
VOCAB = 1001  # the debug preset's: tp=2 needs padding (to 1008)
SOURCES = ["news", "web"]


def layout(tp: int = 1, pp: int = 1, dp: int = 1) -> list[str]:
    return [f"parallel.tp={tp}", f"parallel.pp={pp}", f"parallel.dp={dp}"]


# --- a small corpus, written by hand in the layout etl/shards/stage.py writes -----------------------------


def write_corpus(root: Path, num_docs: int = 240, num_shards: int = 2) -> Path:
    """Shards + ``.src`` sidecars + manifest.json. Each document repeats a short motif of ids
    below 60 (a distribution a tiny model learns within a few steps), then ``<eod>`` = 0."""
    rng = random.Random(3)
    docs = []
    for _ in range(num_docs):
        motif = [rng.randrange(1, 60) for _ in range(rng.randint(2, 5))]
        docs.append((rng.randrange(num_shards), rng.choice(SOURCES), motif * rng.randint(4, 12) + [0]))
    return shard_fixture.write_corpus(root, docs, num_shards, SOURCES, eod_id=0, vocab_size=VOCAB)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "shards")


def rows(run_dir: Path, name: str = "metrics.jsonl") -> list[dict]:
    return [json.loads(line) for line in (run_dir / name).read_text().splitlines() if line]


def assert_same_curve(got: list[dict], ref: list[dict]) -> None:
    by_step = {r["step"]: r for r in ref}
    assert got, "no metrics rows"
    for r in got:
        want = by_step[r["step"]]
        for key in ("loss", "val_loss"):
            if key in want:
                assert abs(r[key] - want[key]) <= RTOL * abs(want[key]), (r["step"], key, r[key], want[key])
        assert r["lr"] == pytest.approx(want["lr"], rel=1e-12)


# --- without Ray ----------------------------------------------------------------------------------


def test_lr_warms_up_then_decays_to_the_floor():
    cfg = TrainConfig(steps=10, warmup=2, lr=1.0, min_lr_ratio=0.1)
    assert [lr_at(s, cfg) for s in (1, 2)] == [0.5, 1.0]
    assert lr_at(10, cfg) == pytest.approx(0.1)
    lrs = [lr_at(s, cfg) for s in range(2, 11)]
    assert all(a > b for a, b in zip(lrs, lrs[1:]))
    assert lr_at(7, dataclasses.replace(cfg, lr_schedule="constant")) == 1.0
    with pytest.raises(ValueError, match="lr_schedule"):
        TrainConfig(lr_schedule="linear")


def test_config_tree_loads_debug_toml_with_overrides(corpus):
    cfg = load_config(
        TrainLMConfig,
        CONFIGS / "debug.toml",
        ["parallel.tp=2", "model.n_layers=2", "data.weights.news=3", "data.weights.web=1"],
    )
    assert (cfg.parallel.tp, cfg.train.global_batch, cfg.data.seq_len) == (2, 8, 16)
    assert cfg.data.weights == {"news": 3.0, "web": 1.0}
    job = resolve(cfg, str(corpus.parent), "relative/run")
    assert job.model == ModelConfig(
        vocab_size=VOCAB, vocab_multiple=8, seq_len=16, n_layers=2, dim=32, ffn_dim=64, n_heads=4
    )  # the vocabulary comes from the manifest
    assert Path(job.run_dir).is_absolute() and Path(job.manifest) == corpus


def test_model_section_is_the_models_config_on_a_preset():
    # [model] is ModelConfig itself: a preset, then any of its fields on top
    cfg = load_config(TrainLMConfig, None, ["model.dim=64", "model.ffn_dim=256"])
    assert cfg.model == PRESETS["debug"].replace(dim=64, ffn_dim=256)  # the job's default preset
    cfg = load_config(TrainLMConfig, CONFIGS / "demo.toml", ["model.preset=350m", "model.n_layers=2"])
    assert cfg.model == PRESETS["350M"].replace(n_layers=2, seq_len=64, dim=64, ffn_dim=256, n_heads=4)
    with pytest.raises(ConfigError, match="unknown model preset '7B'; choose from debug, 350M"):
        load_config(TrainLMConfig, None, ["model.preset=7B"])
    with pytest.raises(ConfigError, match="parallel.schedule must be one of"):
        load_config(TrainLMConfig, None, ["parallel.schedule=zigzag"])
    with pytest.raises(ConfigError, match="train.compile_backend must be one of"):
        load_config(TrainLMConfig, None, ["train.compile_backend=tvm"])
    with pytest.raises(ValueError, match="ray.resize_interval_s must be > 0"):  # the section's own check
        load_config(TrainLMConfig, None, ["ray.resize_interval_s=0"])
    with pytest.raises(ValueError, match="ray.worker_start_timeout_s must be >= 0"):
        load_config(TrainLMConfig, None, ["ray.worker_start_timeout_s=-1"])


def test_worker_start_timeout_reaches_ray_trains_controller(monkeypatch, tmp_path):
    """``ray.worker_start_timeout_s`` is Ray Train V2's group start timeout, set in the driver's
    environment, which Ray Train hands on to its controller (a Ray upgrade that renames the
    variable or stops handing it on fails here); 0 leaves Ray's own setting alone."""
    import types

    from ray.train.v2._internal import constants

    from train.job import WORKER_START_TIMEOUT_ENV, build_trainer

    assert WORKER_START_TIMEOUT_ENV == constants.WORKER_GROUP_START_TIMEOUT_S_ENV_VAR
    assert WORKER_START_TIMEOUT_ENV in constants.ENV_VARS_TO_PROPAGATE
    job = types.SimpleNamespace(run_dir=str(tmp_path))
    monkeypatch.setenv(WORKER_START_TIMEOUT_ENV, "45")
    build_trainer(load_config(TrainLMConfig, None, ["ray.use_gpu=false"]), job)
    assert os.environ[WORKER_START_TIMEOUT_ENV] == "45"  # the default: the user's (or Ray's) setting
    build_trainer(load_config(TrainLMConfig, None, ["ray.use_gpu=false", "ray.worker_start_timeout_s=25"]), job)
    assert os.environ[WORKER_START_TIMEOUT_ENV] == "25.0"


@pytest.mark.parametrize(
    "overrides, match",
    [
        (["parallel.tp=3"], "n_heads=4 does not divide by tp=3"),
        (["data.seq_len=32"], "longer than the model's context"),
        (["data.weights.books=1"], "unknown source"),
        (["parallel.dp_replicate=2", "parallel.dp=2"], r"needs dp_shard='fsdp'"),
        (["parallel.dp=4", "ray.min_workers=1"], r"elastic layout \(ray.min_workers\):\n  - at dp=3: global_batch=8 "),
        (["parallel.dp=2", "ray.min_workers=3"], r"ray.min_workers=3 must be between 1 and the layout's 2 workers"),
        (["parallel.tp=2", "parallel.dp=2", "ray.min_workers=2"], r"an elastic run needs tp = pp = 1"),
    ],
)
def test_bad_configs_fail_before_any_worker_starts(corpus, overrides, match):
    cfg = load_config(TrainLMConfig, CONFIGS / "debug.toml", overrides)
    with pytest.raises(ValueError, match=match):
        resolve(cfg, str(corpus), "run")


@pytest.fixture
def world_of_one():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def _save(run_dir: Path, step: int) -> Path:
    path = checkpoint.step_dir(run_dir, step)
    sd = {"model": {"w": torch.arange(6.0).reshape(2, 3) * step}, "rng": {"rank0": {"cpu": torch.get_rng_state()}}}
    checkpoint.save(path, sd, {"step": step})
    return path


def test_checkpoint_marker_checksums_resume_order_and_pruning(tmp_path, world_of_one):
    for step in (2, 4, 6):
        _save(tmp_path, step)
    torn = checkpoint.step_dir(tmp_path, 8)  # a save killed before its marker
    shutil.copytree(checkpoint.step_dir(tmp_path, 6), torn)
    (torn / checkpoint.MARKER).unlink()
    assert checkpoint.complete_steps(tmp_path) == [6, 4, 2]
    marker = json.loads((checkpoint.step_dir(tmp_path, 6) / checkpoint.MARKER).read_text())
    assert set(marker["files"]) == {".metadata", "__0_0.distcp", "state.json"}

    sd = {"model": {"w": torch.zeros(2, 3)}}
    checkpoint.load(checkpoint.step_dir(tmp_path, 4), sd)
    assert torch.equal(sd["model"]["w"], torch.arange(6.0).reshape(2, 3) * 4)

    shard = checkpoint.step_dir(tmp_path, 6) / "__0_0.distcp"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF  # same size: only the checksum can tell
    shard.write_bytes(bytes(data))
    assert checkpoint.verify(checkpoint.step_dir(tmp_path, 4))
    assert not checkpoint.verify(checkpoint.step_dir(tmp_path, 6))

    _save(tmp_path, 10)  # newer than the torn step-8: that one is now garbage
    assert [p.name for p in checkpoint.prune(tmp_path, keep=2)] == ["step-0000002", "step-0000004", "step-0000008"]
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-0000006", "step-0000010"]


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_checkpoint_metadata_is_unpickled_with_dcp_classes_only(tmp_path, world_of_one):
    path = _save(tmp_path, 1)
    assert checkpoint.read_metadata(path).state_dict_metadata["model.w"].size == torch.Size([2, 3])
    (path / checkpoint.METADATA).write_bytes(pickle.dumps(_Boom()))
    with pytest.raises(checkpoint.CheckpointError, match="posix.system|os.system"):
        checkpoint.read_metadata(path)
    with pytest.raises(checkpoint.CheckpointError):
        checkpoint.load(path, {"model": {"w": torch.zeros(2, 3)}})

    bytes_path = checkpoint.step_dir(tmp_path, 2)
    import torch.distributed.checkpoint as dcp

    dcp.save({"model": {"w": torch.zeros(2, 3)}, "extra": io.BytesIO(b"x")}, checkpoint_id=str(bytes_path))
    with pytest.raises(checkpoint.CheckpointError, match="BytesStorageMetadata"):
        checkpoint.read_metadata(bytes_path)


def test_a_run_dir_saved_with_another_global_batch_is_refused_before_training(corpus, tmp_path, world_of_one):
    state = {"step": 3, "data": {"global_batch": 8, "seq_len": 16, "seed": 0, "weights": {}}}
    checkpoint.save(checkpoint.step_dir(tmp_path, 3), {"model": {"w": torch.zeros(2)}}, state)
    cfg = load_config(TrainLMConfig, CONFIGS / "debug.toml", ["train.global_batch=16"])
    with pytest.raises(checkpoint.CheckpointError, match="global_batch=8; this run has global_batch=16"):
        resolve(cfg, str(corpus), str(tmp_path))
    resolve(load_config(TrainLMConfig, CONFIGS / "debug.toml"), str(corpus), str(tmp_path))  # same batch: fine


# --- on a local Ray -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_ray():
    import ray

    init_ray(RaySection(dashboard=False), num_workers=4)
    yield
    ray.shutdown()


def train(corpus: Path, run_dir: Path, overrides: list[str], loop=None) -> dict:
    cfg = load_config(TrainLMConfig, CONFIGS / "debug.toml", COMMON + overrides)
    return run(cfg, str(corpus), str(run_dir), loop=loop)


def killed_during_async_save(marker: str, step: int, rank: int):
    """A ``train_loop`` whose world rank ``rank`` dies (``os._exit``) as soon as the background
    thread of step ``step``'s asynchronous save starts, before it waits for DCP's write, unless
    ``marker`` exists (first attempt only). The marker records whether DCP's upload had finished."""

    def loop(config):
        import os

        import ray.train

        from train import checkpoint as ckpt
        from train import loop as train_loop_module

        original = ckpt._finish_upload

        def finish(upload, path, r):
            if (
                ckpt.step_of(path) == step
                and not os.path.exists(marker)
                and ray.train.get_context().get_world_rank() == rank
            ):
                with open(marker, "w") as f:
                    f.write(json.dumps({"upload_done": upload.done()}))
                os._exit(1)
            return original(upload, path, r)

        ckpt._finish_upload = finish
        train_loop_module.train_loop(config)

    return loop


@pytest.fixture(scope="module")
def reference(local_ray, corpus, tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    train(corpus, run_dir, layout())
    return run_dir


@pytest.fixture(scope="module")
def tp2_dp2(local_ray, corpus, tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("tp2_dp2") / "run"
    train(corpus, run_dir, layout(tp=2, dp=2) + ["train.keep_checkpoints=0"])
    return run_dir


@pytest.mark.slow
def test_tp2_dp2_on_four_workers_follows_the_one_process_curve(reference, tp2_dp2):
    ref, got = rows(reference), rows(tp2_dp2)
    assert [r["step"] for r in got] == list(range(1, STEPS + 1))
    assert_same_curve(got, ref)
    for r in got:
        assert {"step", "loss", "lr", "grad_norm", "tokens_per_s", "tflops", "mfu", "memory_gib"} <= set(r)
        assert np.isfinite(r["loss"]) and r["tokens_per_s"] > 0 and r["memory_gib"] > 0
    assert [r["step"] for r in got if "val_loss" in r] == [4, 8]
    assert got[-1]["val_ppl"] == pytest.approx(np.exp(got[-1]["val_loss"]))
    assert got[-1]["loss"] < got[0]["loss"] - 0.5, "the loss should be going down"
    assert sorted(p.name for p in (tp2_dp2 / "checkpoints").iterdir()) == [
        "step-0000003",
        "step-0000006",
        "step-0000008",
    ]  # keep_checkpoints=0: all kept
    for step in (3, 6, 8):
        path = checkpoint.step_dir(tp2_dp2, step)
        marker = checkpoint.read_marker(path)
        assert marker is not None and marker["step"] == step
        assert {"__0_0.distcp", "__3_0.distcp", ".metadata", "state.json"} <= set(marker["files"])
        state = checkpoint.read_state(path)
        assert state["layout"]["tp"] == 2 and state["data"]["next_index"] == step
    assert list((tp2_dp2 / "tensorboard").glob("events.out.tfevents.*"))
    assert [e["event"] for e in rows(tp2_dp2, "events.jsonl")] == [
        "start",
        "checkpoint",
        "checkpoint",
        "checkpoint",
        "finish",
    ]


@pytest.mark.slow
def test_a_worker_killed_during_an_async_save_is_replaced_and_resumes_from_the_last_complete_checkpoint(
    local_ray, corpus, reference, tmp_path
):
    run_dir = tmp_path / "run"
    marker = tmp_path / "killed-once"
    train(
        corpus,
        run_dir,
        layout(dp=2) + ["parallel.dp_shard=fsdp", "train.async_checkpoint=true"],
        loop=killed_during_async_save(str(marker), step=6, rank=1),
    )
    assert marker.exists(), "the worker was never killed"
    got, ref = rows(run_dir), rows(reference)
    assert [r["step"] for r in got] == list(range(1, STEPS + 1))  # replayed steps 4-6 logged once
    assert_same_curve(got, ref)
    assert got[-1]["loss"] == pytest.approx(ref[-1]["loss"], rel=RTOL)
    events = rows(run_dir, "events.jsonl")
    resume = [e for e in events if e["event"] == "resume"]
    assert len(resume) == 1 and resume[0]["attempt"] == 2
    # step 6's files were (being) written but it had no COMPLETE: the previous checkpoint it is
    assert (resume[0]["step"], resume[0]["data_index"], resume[0]["samples"]) == (3, 3, 3 * 8)
    # a checkpoint event means complete; step 6 only became complete when the second attempt saved it
    assert [(e["attempt"], e["step"]) for e in events if e["event"] == "checkpoint"] == [(1, 3), (2, 6), (2, 8)]
    # keep_checkpoints = 2: step-3 is pruned once step-8 is complete
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["step-0000006", "step-0000008"]


@pytest.mark.slow
def test_a_tp2_dp2_checkpoint_continues_at_pp2_on_the_same_curve(local_ray, corpus, reference, tp2_dp2, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(checkpoint.step_dir(tp2_dp2, 3), checkpoint.step_dir(run_dir, 3))
    train(corpus, run_dir, layout(pp=2))
    got = rows(run_dir)
    assert [r["step"] for r in got] == list(range(4, STEPS + 1))  # data position: step 4's batch first
    assert_same_curve(got, rows(reference))
    assert_same_curve(got, rows(tp2_dp2))
    (resume,) = [e for e in rows(run_dir, "events.jsonl") if e["event"] == "resume"]
    assert (resume["step"], resume["data_index"], resume["world_size"], resume["layout"]["pp"]) == (3, 3, 2, 2)

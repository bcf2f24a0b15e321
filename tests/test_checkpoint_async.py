"""Asynchronous checkpoints (``train.checkpoint.AsyncSaver``) in one process: the state saved is
the state when the save started, and COMPLETE appears only once the background write is done.
(A worker killed during an async save, on Ray: ``tests/test_train_lm.py``.)"""

from __future__ import annotations

import threading

import pytest
import torch

from tests.test_train_lm import world_of_one  # noqa: F401  (the one-process gloo group fixture)
from train import checkpoint


def test_async_save_keeps_the_state_at_start_and_is_complete_only_when_written(tmp_path, world_of_one):  # noqa: F811
    saver = checkpoint.AsyncSaver()
    w = torch.arange(1_000_000.0)
    path = checkpoint.step_dir(tmp_path, 1)
    release = threading.Event()
    original = checkpoint._finish_upload
    checkpoint._finish_upload = lambda *a: (release.wait(10), original(*a))[1]  # hold the background thread
    try:
        assert saver.start(path, {"model": {"w": w}}, {"step": 1}) is None
        w.add_(1.0)  # training goes on and changes the weights
        assert saver.poll() is None and saver.poll() is None  # not finished: no marker, whatever DCP wrote
        assert checkpoint.complete_steps(tmp_path) == [] and not (path / checkpoint.MARKER).exists()
        release.set()
        assert saver.wait() == path
    finally:
        checkpoint._finish_upload = original
        release.set()
    assert checkpoint.complete_steps(tmp_path) == [1] and checkpoint.verify(path)
    assert set(checkpoint.read_marker(path)["files"]) == {".metadata", "__0_0.distcp", "state.json"}
    sd = {"model": {"w": torch.zeros(1_000_000)}}
    checkpoint.load(path, sd)
    assert torch.equal(sd["model"]["w"], torch.arange(1_000_000.0))  # the values at start, not +1

    assert saver.start(checkpoint.step_dir(tmp_path, 2), {"model": {"w": w}}, {"step": 2}) is None
    assert saver.start(checkpoint.step_dir(tmp_path, 3), {"model": {"w": w}}, {"step": 3}) == checkpoint.step_dir(
        tmp_path, 2
    )  # one in flight: starting the next finishes the previous
    saver.close()
    assert checkpoint.complete_steps(tmp_path) == [3, 2, 1]


def test_a_failed_async_save_is_never_marked_complete(tmp_path, world_of_one):  # noqa: F811
    saver = checkpoint.AsyncSaver()
    original = checkpoint._finish_upload

    def fail(*args):
        original(*args)
        raise OSError("disk full")

    checkpoint._finish_upload = fail
    try:
        saver.start(checkpoint.step_dir(tmp_path, 4), {"model": {"w": torch.ones(3)}}, {"step": 4})
        with pytest.raises(checkpoint.CheckpointError, match="rank 0: OSError\\('disk full'\\)"):
            saver.wait()
    finally:
        checkpoint._finish_upload = original
    assert checkpoint.complete_steps(tmp_path) == []
    saver.close()

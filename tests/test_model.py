"""The single-device GPT: shapes, tying, causality, the PanGu-α query layer, presets, seeded
per-parameter init, and activation recomputation (single process, no torch.distributed)."""

import copy
from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from train.model import GPT, PRESETS, build_model, num_params, preset
from train.parallel.ac import apply_ac
from train.parallel.pp import materialize, stage_model

CFG = preset("debug")


def tokens(batch=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, CFG.vocab_size, (batch, CFG.seq_len), generator=g)


def test_logits_cover_the_padded_vocabulary():
    model = build_model(CFG, seed=0)
    assert CFG.vocab_size == 1001 and CFG.padded_vocab == 1008
    assert model(tokens()).shape == (2, CFG.seq_len, CFG.padded_vocab)


def test_output_layer_is_the_token_embedding():
    model = build_model(CFG, seed=0)
    assert model.output.weight is model.embed.tok.weight
    model(tokens()).sum().backward()
    grad_both = model.embed.tok.weight.grad.clone()
    # The shared matrix gets gradient from both uses: more than from the output layer alone.
    untied = build_model(CFG, seed=0)
    untied.output.weight = torch.nn.Parameter(untied.embed.tok.weight.detach().clone())
    untied(tokens()).sum().backward()
    torch.testing.assert_close(grad_both, untied.embed.tok.weight.grad + untied.output.weight.grad)


def test_logits_are_causal():
    model = build_model(CFG, seed=0).eval()
    x = tokens(batch=1)
    y = x.clone()
    y[0, 10] = (y[0, 10] + 1) % CFG.vocab_size
    a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :10], b[:, :10])
    assert not torch.allclose(a[:, 10:], b[:, 10:])


def test_query_layer_queries_with_the_position_embedding():
    """Row n of the query embedding is the query at position n: changing it changes only
    position n's output, and the layer sits on top of the stack (PanGu-α §2.2.2)."""
    model = build_model(CFG, seed=0).eval()
    x = tokens(batch=1)
    before = model(x)
    with torch.no_grad():
        model.query_layer.attention.query_emb.weight[5] += 1.0
    after = model(x)
    changed = (after - before).abs().amax(dim=-1)[0] > 1e-6
    assert changed.tolist() == [i == 5 for i in range(CFG.seq_len)]
    assert GPT(preset("debug", query_layer=False)).query_layer is None


@pytest.mark.parametrize("name, billions", [("350M", 0.35), ("2.6B", 2.6), ("13B", 13.1), ("200B", 207.0)])
def test_presets_have_the_paper_sizes(name, billions):
    with torch.device("meta"):
        model = GPT(PRESETS[name])
    assert num_params(model) / 1e9 == pytest.approx(billions, rel=0.05)
    assert PRESETS[name].vocab_size == 40_000 and PRESETS[name].seq_len == 1024


def test_unknown_preset_names_the_choices():
    with pytest.raises(ValueError, match="debug, 350M"):
        preset("7B")


def test_a_stage_gets_the_full_models_weights():
    full = build_model(CFG, seed=3)
    last = materialize(stage_model(CFG, stage=1, num_stages=2), seed=3, device=torch.device("cpu"))
    names = dict(last.named_parameters())
    assert set(names) == {
        n for n in dict(full.named_parameters()) if n.startswith(("layers.2", "layers.3", "norm", "query_layer"))
    } | {"output.weight"}
    for n, p in names.items():
        ref = full.embed.tok.weight if n == "output.weight" else full.get_parameter(n)
        assert torch.equal(p, ref), n
    other_seed = build_model(CFG, seed=4)
    assert not torch.equal(other_seed.layers["0"].mlp.w1.weight, full.layers["0"].mlp.w1.weight)


def _grads(model):
    model.zero_grad()
    logits = model(tokens(batch=4, seed=1))
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens(batch=4, seed=2).flatten()).backward()
    return {n.replace("_checkpoint_wrapped_module.", ""): p.grad.clone() for n, p in model.named_parameters()}


class _CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def _backward_ops(model) -> Counter:
    """Aten ops the backward pass runs (recomputed forward ops show up here)."""
    loss = model(tokens(batch=4)).sum()
    with _CountOps() as mode:
        loss.backward()
    return mode.counts


@pytest.mark.parametrize("mode", ["full", "selective"])
def test_recompute_leaves_gradients_unchanged(mode):
    plain = build_model(preset("debug", dropout=0.1), seed=0)
    wrapped = copy.deepcopy(plain)
    apply_ac(wrapped, mode)
    torch.manual_seed(7)
    expected = _grads(plain)
    torch.manual_seed(7)  # same dropout masks: recomputation must replay the RNG state
    got = _grads(wrapped)
    assert set(got) == set(expected)
    for n in expected:
        torch.testing.assert_close(got[n], expected[n], rtol=1e-6, atol=1e-7, msg=n)
    assert set(wrapped.state_dict()) == set(plain.state_dict())  # checkpoints don't see the wrapper


def test_recompute_modes_recompute_what_they_say():
    """Full recomputation re-runs the matmuls in backward; selective keeps them and re-runs only
    the cheap ops (GeLU, LayerNorm); none re-runs nothing."""
    ops = {}
    for mode in ("none", "selective", "full"):
        model = build_model(CFG, seed=0)
        apply_ac(model, mode)
        ops[mode] = _backward_ops(model)
    matmuls = {m: ops[m]["mm"] + ops[m]["addmm"] + ops[m]["bmm"] for m in ops}
    assert ops["none"]["gelu"] == 0 and ops["selective"]["gelu"] > 0 and ops["full"]["gelu"] > 0
    assert matmuls["selective"] == matmuls["none"] < matmuls["full"]


def test_recompute_mode_is_checked():
    with pytest.raises(ValueError, match="none, selective, full"):
        apply_ac(build_model(CFG, seed=0), "some")

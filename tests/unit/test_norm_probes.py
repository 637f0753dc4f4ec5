"""utils.experiments.norm_probes: activation RMS and gradient norm per layer, checked against direct computation."""

import matplotlib
import numpy as np
import pytest
import torch

from utils.blocks import Encoder, EncoderLayer
from utils.experiments import norm_probes
from utils.experiments.norm_probes import (
    activation_rms,
    layer_grad_norms,
    probe_at_init,
    train_copy_task,
    warmup_lr,
)
from utils.figures.norm_probes import VARIANT_STYLE, plot_loss_curves, plot_per_layer

matplotlib.use("Agg")


def small_encoder(norm_first, num_layers=3, d_model=8, seed=0):
    torch.manual_seed(seed)
    return Encoder(d_model, 2, 16, num_layers, norm_first=norm_first)


@pytest.mark.parametrize("norm_first", [False, True])
def test_activation_rms_equals_a_manual_loop(norm_first):
    encoder = small_encoder(norm_first)
    x = 3.0 * torch.randn(2, 5, 8)
    rms, final = activation_rms(encoder, x)
    h = x
    for i, layer in enumerate(encoder.layers):
        h = layer(h)
        assert rms[i] == pytest.approx(torch.sqrt((h**2).mean()).item(), rel=1e-6)
    assert final == pytest.approx(torch.sqrt((encoder.norm(h) ** 2).mean()).item(), rel=1e-6)
    assert rms.shape == (3,)
    if not norm_first:  # every layer ends in a LayerNorm with gamma 1, beta 0
        assert np.allclose(rms, 1.0, atol=1e-4) and final == pytest.approx(rms[-1])


@pytest.mark.parametrize("norm_first", [False, True])
def test_layer_grad_norms_equal_backward(norm_first):
    encoder = small_encoder(norm_first, seed=1)
    x = torch.randn(2, 5, 8)
    norms = layer_grad_norms(encoder, encoder(x).pow(3).mean())
    encoder(x).pow(3).mean().backward()
    for i, layer in enumerate(encoder.layers):
        expected = torch.sqrt(sum((p.grad**2).sum() for p in layer.parameters())).item()
        assert norms[i] == pytest.approx(expected, rel=1e-5)
    assert (norms > 0).all()


def test_layer_grad_norms_zero_for_a_layer_the_loss_ignores():
    encoder = small_encoder(True)
    x = torch.randn(2, 5, 8)
    loss = encoder.layers[0](x).pow(2).mean()  # only layer 0 is in the graph
    norms = layer_grad_norms(encoder, loss)
    assert norms[0] > 0 and (norms[1:] == 0).all()


def test_probe_at_init_is_seeded_and_shaped():
    a = probe_at_init(True, num_layers=4, d_model=16, seed=3)
    b = probe_at_init(True, num_layers=4, d_model=16, seed=3)
    c = probe_at_init(True, num_layers=4, d_model=16, seed=4)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not np.array_equal(a[2], c[2])
    rms, final, grads = a
    assert rms.shape == grads.shape == (4,) and final == pytest.approx(1.0, abs=1e-3)


def test_layers_start_as_copies_unless_independent():
    copied = norm_probes._encoder(16, 32, 3, True, independent_layers=False)
    independent = norm_probes._encoder(16, 32, 3, True, independent_layers=True)
    first = [layer.ff.linear1.weight for layer in copied.layers]
    assert all(torch.equal(first[0], w) for w in first[1:])  # as torch.nn.TransformerEncoder's deep copies
    weights = [layer.ff.linear1.weight for layer in independent.layers]
    assert not any(torch.equal(weights[0], w) for w in weights[1:])
    assert len({id(layer) for layer in copied.layers}) == 3  # copies, not one shared layer


def test_probe_and_training_use_independent_layers_when_asked():
    a = probe_at_init(True, num_layers=4, d_model=16, seed=3)
    b = probe_at_init(True, num_layers=4, d_model=16, seed=3, independent_layers=True)
    assert not np.array_equal(a[2], b[2])
    c = train_copy_task(False, lr=0.01, warmup_steps=1, steps=3, num_layers=2, d_model=16)
    d = train_copy_task(False, lr=0.01, warmup_steps=1, steps=3, num_layers=2, d_model=16, independent_layers=True)
    assert not np.array_equal(c, d)


def test_probe_post_norm_stream_stays_at_unit_rms():
    rms, final, grads = probe_at_init(False, num_layers=5, d_model=16, seed=0)
    assert np.allclose(rms, 1.0, atol=1e-3) and (grads > 0).all()


def test_plot_per_layer_draws_one_styled_line_per_variant():
    values = {"post-norm": np.ones((3, 4)), "pre-norm": np.arange(12.0).reshape(3, 4) + 1}
    ax = plot_per_layer(values, "grad norm", "title", logy=True)
    lines = ax.get_lines()
    assert len(lines) == 2 and ax.get_yscale() == "log"
    assert matplotlib.colors.same_color(lines[0].get_color(), VARIANT_STYLE["post-norm"]["color"])
    assert np.allclose(lines[1].get_ydata(), np.median(values["pre-norm"], 0))
    matplotlib.pyplot.close("all")


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: activation_rms(EncoderLayer(8, 2, 16), torch.randn(2, 5, 8)), TypeError, "encoder"),
        (lambda: activation_rms(small_encoder(False), torch.randn(5, 8)), ValueError, "x"),
        (lambda: activation_rms(small_encoder(False), torch.randn(2, 5, 6)), ValueError, "d_model=8"),
        (lambda: activation_rms(small_encoder(False), torch.ones(2, 5, 8, dtype=torch.long)), ValueError, "x"),
        (lambda: activation_rms(small_encoder(False), [[1.0]]), TypeError, "x"),
        (lambda: layer_grad_norms(small_encoder(False), torch.ones(3, requires_grad=True)), ValueError, "loss"),
        (lambda: layer_grad_norms(small_encoder(False), torch.tensor(1.0)), ValueError, "requires grad"),
        (lambda: layer_grad_norms(small_encoder(False), 1.0), TypeError, "loss"),
        (lambda: layer_grad_norms("encoder", torch.tensor(1.0)), TypeError, "encoder"),
        (lambda: probe_at_init(1), TypeError, "norm_first"),
        (lambda: probe_at_init(True, num_layers=0), ValueError, "num_layers"),
        (lambda: probe_at_init(True, d_model=30), ValueError, "d_model"),
        (lambda: probe_at_init(True, T=2.5), TypeError, "T"),
        (lambda: probe_at_init(True, independent_layers=1), TypeError, "independent_layers"),
        (lambda: plot_per_layer([np.ones((2, 3))], "y", "t"), TypeError, "values"),
        (lambda: plot_per_layer({"mid-norm": np.ones((2, 3))}, "y", "t"), ValueError, "mid-norm"),
        (lambda: plot_per_layer({"pre-norm": np.ones(3)}, "y", "t"), ValueError, "(seeds, num_layers)"),
    ],
)
def test_bad_input_names_the_argument(call, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        call()
    matplotlib.pyplot.close("all")


def test_warmup_lr_rises_linearly_then_stays():
    assert [warmup_lr(step, 0.01, 4) for step in range(6)] == pytest.approx([0.0025, 0.005, 0.0075, 0.01, 0.01, 0.01])
    assert warmup_lr(0, 0.5, 1) == 0.5  # warmup_steps=1: no warm-up


def test_train_copy_task_learns_and_is_seeded():
    a = train_copy_task(True, lr=0.01, warmup_steps=1, steps=40, num_layers=2, d_model=16, seed=0)
    b = train_copy_task(True, lr=0.01, warmup_steps=1, steps=40, num_layers=2, d_model=16, seed=0)
    assert a.shape == (40,) and np.array_equal(a, b)
    assert a[0] > 2.0 and a[-5:].mean() < 0.5  # starts near ln 16, learns to copy


def test_train_copy_task_applies_the_warmup(monkeypatch):
    seen = []
    original = torch.optim.Adam.step

    def record(self, *args, **kwargs):
        seen.append(self.param_groups[0]["lr"])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.Adam, "step", record)
    train_copy_task(False, lr=0.02, warmup_steps=4, steps=6, num_layers=1, d_model=8)
    assert seen == pytest.approx([0.005, 0.01, 0.015, 0.02, 0.02, 0.02])


def test_plot_loss_curves_one_line_per_seed_in_the_variant_colour():
    losses = {"post-norm": np.ones((3, 5)), "pre-norm": np.zeros((2, 5))}
    ax = plot_loss_curves(losses, "title", chance=np.log(16))
    lines = ax.get_lines()
    assert len(lines) == 3 + 2 + 1
    assert all(
        matplotlib.colors.same_color(line.get_color(), VARIANT_STYLE["pre-norm"]["color"]) for line in lines[3:5]
    )
    assert lines[-1].get_ydata()[0] == pytest.approx(np.log(16))
    matplotlib.pyplot.close("all")


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: warmup_lr(-1, 0.01, 4), ValueError, "step"),
        (lambda: warmup_lr(1.5, 0.01, 4), TypeError, "step"),
        (lambda: warmup_lr(0, 0.0, 4), ValueError, "lr"),
        (lambda: warmup_lr(0, 0.01, 0), ValueError, "warmup_steps"),
        (lambda: train_copy_task("yes", 0.01, 1), TypeError, "norm_first"),
        (lambda: train_copy_task(True, -0.01, 1), ValueError, "lr"),
        (lambda: train_copy_task(True, 0.01, 1, steps=0), ValueError, "steps"),
        (lambda: train_copy_task(True, 0.01, 1, d_model=10), ValueError, "d_model"),
        (lambda: train_copy_task(True, 0.01, 1, independent_layers="no"), TypeError, "independent_layers"),
        (
            lambda: plot_loss_curves({}, "t"),
            ValueError,
            "losses must be a non-empty dict of variant -> array, got an empty one",
        ),
        (lambda: plot_loss_curves([], "t"), TypeError, "losses must be a non-empty dict of variant -> array, got list"),
        (lambda: plot_loss_curves({"no-norm": np.ones((1, 3))}, "t"), ValueError, "no-norm"),
        (lambda: plot_loss_curves({"post-norm": np.ones(3)}, "t"), ValueError, "(seeds, steps)"),
    ],
)
def test_training_helpers_bad_input(call, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        call()
    matplotlib.pyplot.close("all")

"""utils.experiments.norm_probes: activation RMS and gradient norm per layer, checked against direct computation."""

import json

import matplotlib
import numpy as np
import pytest
import torch
from torch import nn

from utils.blocks import Encoder, EncoderLayer
from utils.experiments import norm_probes
from utils.experiments.norm_probes import (
    activation_rms,
    copy_task_model,
    gap_findings,
    gradient_gap,
    last_layer_norm_inputs,
    layer_grad_norms,
    load_warmup_seeds,
    probe_at_init,
    probe_stacks,
    stream_mean_and_spread,
    train_copy_task,
    warmup_lr,
)
from utils.figures.norm_probes import VARIANT_STYLE, plot_gradient_gap, plot_loss_curves, plot_norm_axes, plot_per_layer

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


@pytest.mark.parametrize("norm_first", [False, True])
def test_last_layer_norm_inputs_equal_a_manual_pass_of_the_probed_stack(norm_first):
    torch.manual_seed(2)
    encoder = norm_probes._encoder(16, 64, 3, norm_first, independent_layers=False)
    nn.Linear(16, 16)  # the readout, drawn before the input as in probe_at_init
    x = torch.randn(8, 10, 16)  # (batch, T, d_model)
    with torch.no_grad():
        for layer in encoder.layers[:-1]:
            x = layer(x)
        last = encoder.layers[-1]
        attend = lambda y: last.self_attn(y, y, y)[0]  # noqa: E731
        if norm_first:
            first_in = x
            second_in = x + attend(last.norm1(x))
        else:
            first_in = x + attend(x)
            y = last.norm1(first_in)
            second_in = y + last.ff(y)
    expected = [t.pow(2).mean().sqrt().item() for t in (first_in, second_in)]
    measured = last_layer_norm_inputs(norm_first, num_layers=3, d_model=16, seed=2)
    assert np.allclose(measured, expected, rtol=1e-5)
    assert not np.allclose(measured, last_layer_norm_inputs(norm_first, num_layers=3, d_model=16, seed=3))


def test_post_norm_last_layer_norms_see_inputs_above_unit_rms():
    first, second = last_layer_norm_inputs(False, num_layers=6, d_model=16, seed=0)
    assert first > 1.0 and second > 1.0  # x + f(x): a unit-RMS stream plus a sublayer's output


def test_probe_stacks_collects_probe_at_init_per_variant_depth_and_seed():
    rms, final, grads = probe_stacks((2, 3), range(2), d_model=8)
    assert set(rms) == {(v, L) for v in ("post-norm", "pre-norm") for L in (2, 3)}
    one = probe_at_init(True, num_layers=3, d_model=8, seed=1)
    assert np.array_equal(rms["pre-norm", 3][1], one[0]) and final["pre-norm", 3][1] == one[1]
    assert np.array_equal(grads["pre-norm", 3][1], one[2]) and grads["post-norm", 2].shape == (2, 2)
    independent = probe_stacks((2,), [0], d_model=8, independent_layers=True)[2]
    assert not np.array_equal(independent["pre-norm", 2], grads["pre-norm", 2][:1])


def fake_probes(post_last, pre_last, pre_rms):
    """grads and rms dicts at depths 2 and 4 whose last layers hold the given values (one per seed)."""
    grads, rms = {}, {}
    for L in (2, 4):
        grads["post-norm", L] = np.column_stack([np.ones((2, L - 1)), post_last[L]])
        grads["pre-norm", L] = np.column_stack([np.ones((2, L - 1)), pre_last[L]])
        rms["post-norm", L] = np.ones((2, L))
        rms["pre-norm", L] = np.column_stack([np.ones((2, L - 1)), pre_rms[L]])
    return grads, rms


@pytest.mark.parametrize("independent_layers", [False, True])
def test_stream_mean_and_spread_equal_a_manual_pass_of_the_probed_pre_norm_stack(independent_layers):
    encoder, _, x, _ = norm_probes._probe_setup(True, 3, 16, 2, 8, 10, 16, independent_layers)
    with torch.no_grad():
        for layer in encoder.layers:
            x = layer(x)  # (batch, T, d_model)
    means, spreads = stream_mean_and_spread(num_layers=3, d_model=16, seed=2, independent_layers=independent_layers)
    assert means.shape == spreads.shape == (80,)
    assert np.allclose(means, x.mean(-1).abs().flatten().numpy(), atol=1e-6)
    assert np.allclose(spreads, x.std(-1, unbiased=False).flatten().numpy(), atol=1e-6)
    assert np.allclose(means**2 + spreads**2, x.pow(2).mean(-1).flatten().numpy(), rtol=1e-4)  # RMS² = mean² + σ²


def test_gradient_gap_divides_the_last_layers_and_gap_findings_can_fail():
    grads, rms = fake_probes(
        {2: [2.0, 3.0], 4: [8.0, 9.0]}, {2: [1.0, 1.0], 4: [2.0, 3.0]}, {2: [2.0, 2.0], 4: [4.0, 3.0]}
    )
    ratio, tracks = gradient_gap(grads, rms)
    assert np.allclose(ratio[2], [2.0, 3.0]) and np.allclose(ratio[4], [4.0, 3.0])
    assert np.allclose(tracks[2], [1.0, 1.5]) and np.allclose(tracks[4], [1.0, 1.0])
    assert gap_findings(ratio, tracks) == {
        "post-norm larger in every stack": True,
        "grows with depth": True,
        "gap / pre-norm's stream RMS inside band": False,  # 1.5 is on the band's edge
    }
    assert all(gap_findings(ratio, tracks, band=(0.5, 2.0)).values())
    inside = {2: np.array([0.68, 1.49]), 4: np.ones(2)}  # the default band is a factor 1.5 either way
    assert gap_findings(ratio, inside)["gap / pre-norm's stream RMS inside band"] is True
    below = {2: np.array([0.66, 1.0]), 4: np.ones(2)}
    assert gap_findings(ratio, below)["gap / pre-norm's stream RMS inside band"] is False
    shrinking = {2: np.array([4.0, 4.0]), 4: np.array([0.5, 2.0])}
    findings = gap_findings(shrinking, {2: np.ones(2), 4: np.ones(2)})
    assert findings["post-norm larger in every stack"] is False and findings["grows with depth"] is False


def test_plot_gradient_gap_draws_both_panels():
    grads, rms = fake_probes(
        {2: [2.0, 3.0], 4: [8.0, 9.0]}, {2: [1.0, 1.0], 4: [2.0, 3.0]}, {2: [2.0, 2.0], 4: [4.0, 3.0]}
    )
    ratio, _ = gradient_gap(grads, rms)
    fig = plot_gradient_gap(grads, rms, ratio, "copied", depth=4)
    left, right = fig.axes[:2]
    assert "4 copied layers" in left.get_title() and len(left.get_lines()) == 2
    assert np.allclose(right.get_lines()[2].get_ydata(), ratio[4]) and right.get_yscale() == "log"
    gaps, streams = right.get_lines()[2], right.get_lines()[3]  # depth 4: triangles, then hollow squares
    assert (gaps.get_xdata() < 4).all() and (streams.get_xdata() > 4).all()  # side by side, not on top
    assert streams.get_markerfacecolor() == "none"
    matplotlib.pyplot.close("all")


def test_plot_norm_axes_outlines_a_column_and_a_row():
    raw = np.arange(12.0).reshape(3, 4)
    fig = plot_norm_axes(raw, torch.zeros(3, 4), np.zeros((3, 4)))
    images = [ax for ax in fig.axes if ax.get_images()]
    assert len(images) == 3 and len(images[0].texts) == 12
    column, row = images[1].patches[0], images[2].patches[0]
    assert (column.get_width(), column.get_height()) == (1, 3) and (row.get_width(), row.get_height()) == (4, 1)
    matplotlib.pyplot.close("all")


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
        (lambda: last_layer_norm_inputs("yes"), TypeError, "norm_first"),
        (lambda: stream_mean_and_spread(num_layers=0), ValueError, "num_layers"),
        (lambda: stream_mean_and_spread(independent_layers="no"), TypeError, "independent_layers"),
        (lambda: last_layer_norm_inputs(False, num_layers=0), ValueError, "num_layers"),
        (lambda: last_layer_norm_inputs(False, d_model=30), ValueError, "d_model"),
        (lambda: last_layer_norm_inputs(False, seed=-1), ValueError, "seed"),
        (lambda: last_layer_norm_inputs(False, batch=1.5), TypeError, "batch"),
        (lambda: last_layer_norm_inputs(False, independent_layers=None), TypeError, "independent_layers"),
        (lambda: probe_stacks("24", range(2)), TypeError, "depths"),
        (lambda: probe_stacks([], range(2)), ValueError, "depths"),
        (lambda: probe_stacks([0], range(2)), ValueError, "depth"),
        (lambda: probe_stacks([2], [1.5]), TypeError, "seed"),
        (lambda: probe_stacks([2], []), ValueError, "seeds"),
        (lambda: gradient_gap([1], {}), TypeError, "grads"),
        (lambda: gradient_gap({("mid-norm", 2): np.ones((2, 2))}, {}), ValueError, "variant"),
        (lambda: gradient_gap({("post-norm", 2): np.ones((2, 2))}, {}), ValueError, "pre-norm"),
        (
            lambda: gradient_gap(
                *fake_probes({2: [1, 1], 4: [1, 1]}, {2: [1, 1], 4: [1, 1]}, {2: [1, 1], 4: [1, 1]})[:1], {}
            ),
            ValueError,
            "rms",
        ),
        (
            lambda: gradient_gap({("post-norm", 2): np.ones((2, 3)), ("pre-norm", 2): np.ones((2, 2))}, {}),
            ValueError,
            "num_layers=2",
        ),
        (lambda: gap_findings({2: np.ones(2)}, {4: np.ones(2)}), ValueError, "tracks"),
        (lambda: gap_findings([], {}), TypeError, "ratio"),
        (lambda: gap_findings({2: np.ones(2)}, {2: np.ones(2)}, band=("a", 2)), TypeError, "band"),
        (
            lambda: plot_gradient_gap(
                *fake_probes({2: [1, 1], 4: [1, 1]}, {2: [1, 1], 4: [1, 1]}, {2: [1, 1], 4: [1, 1]}),
                {2: np.ones(2)},
                "copied",
            ),
            ValueError,
            "depths",
        ),
        (
            lambda: plot_gradient_gap(
                *fake_probes({2: [1, 1], 4: [1, 1]}, {2: [1, 1], 4: [1, 1]}, {2: [1, 1], 4: [1, 1]}),
                {2: np.ones(2), 4: np.ones(2)},
                "copied",
            ),
            ValueError,
            "depth",
        ),
        (
            lambda: plot_gradient_gap(
                *fake_probes({2: [1, 1], 4: [1, 1]}, {2: [1, 1], 4: [1, 1]}, {2: [1, 1], 4: [1, 1]}),
                {2: np.ones(2), 4: np.ones(2)},
                3,
                depth=4,
            ),
            TypeError,
            "layers",
        ),
        (lambda: plot_norm_axes([[1.0]], np.ones((1, 1)), np.ones((1, 1))), TypeError, "raw"),
        (lambda: plot_norm_axes(np.ones(3), np.ones(3), np.ones(3)), ValueError, "raw"),
        (lambda: plot_norm_axes(np.ones((3, 4)), np.ones((3, 4)), np.ones((4, 3))), ValueError, "one shape"),
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


@pytest.mark.parametrize("independent_layers", [False, True])
def test_copy_task_model_is_the_model_train_copy_task_trains(monkeypatch, independent_layers):
    def recording(*args, **kwargs):  # copy_task_model, remembering the weights it starts from
        model = original(*args, **kwargs)
        starts.append({k: v.clone() for k, v in model.state_dict().items()})
        return model

    starts, original = [], norm_probes.copy_task_model
    monkeypatch.setattr(norm_probes, "copy_task_model", recording)
    train_copy_task(False, 0.01, 1, steps=1, num_layers=3, d_model=8, seed=4, independent_layers=independent_layers)
    torch.manual_seed(4)
    fresh = copy_task_model(False, num_layers=3, d_model=8, independent_layers=independent_layers)
    assert isinstance(fresh[1], Encoder) and len(fresh[1].layers) == 3 and len(starts) == 1
    assert all(torch.equal(starts[0][k], v) for k, v in fresh.state_dict().items())


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
        (lambda: copy_task_model("yes"), TypeError, "norm_first"),
        (lambda: copy_task_model(True, num_layers=0), ValueError, "num_layers"),
        (lambda: copy_task_model(True, d_model=10), ValueError, "d_model"),
        (lambda: copy_task_model(True, vocab=1.5), TypeError, "vocab"),
        (lambda: copy_task_model(True, independent_layers=1), TypeError, "independent_layers"),
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


def test_load_warmup_seeds_keys_seeds_as_ints_and_rejects_bad_files(tmp_path):
    good = {"setup": {}, "last_steps": 10, "seeds": [5, 6], "end_loss": {"5": 2.7, "6": 0.01}}
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(good))
    assert load_warmup_seeds(path)["end_loss"] == {5: 2.7, 6: 0.01}
    assert load_warmup_seeds(str(path))["seeds"] == [5, 6]
    with pytest.raises(TypeError, match="path must be a path"):
        load_warmup_seeds(3)
    with pytest.raises(FileNotFoundError, match="recreate it with"):
        load_warmup_seeds(tmp_path / "missing.json")
    path.write_text(json.dumps({k: v for k, v in good.items() if k != "end_loss"}))
    with pytest.raises(ValueError, match=r"lacks \['end_loss'\]"):
        load_warmup_seeds(path)
    path.write_text(json.dumps({**good, "seeds": [5, 6, 7]}))
    with pytest.raises(ValueError, match=r"end_loss has seeds \[5, 6\], expected \[5, 6, 7\]"):
        load_warmup_seeds(path)

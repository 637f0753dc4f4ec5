"""utils.experiments.extrapolation: the delayed-copy task, the model with each PE, training and evaluation."""

import math

import pytest
import torch

from utils.experiments.extrapolation import (
    IGNORE,
    PAD,
    PE_KINDS,
    LengthModel,
    RotarySelfAttention,
    accuracy_by_position,
    delayed_copy_batch,
    evaluate,
    train,
)
from utils.multihead import MultiHeadAttention


def test_delayed_copy_targets_are_the_input_shifted():
    g = torch.Generator().manual_seed(0)
    tokens, targets = delayed_copy_batch(4, torch.tensor([5, 3, 9, 9]), 10, 2, g)  # (4, 9)
    assert tokens.shape == targets.shape == (4, 9)
    for b, n in enumerate([5, 3, 9, 9]):
        assert (tokens[b, :n] >= 1).all() and (tokens[b, :n] < 10).all() and (tokens[b, n:] == PAD).all()
        assert (targets[b, :2] == IGNORE).all() and (targets[b, n:] == IGNORE).all()
        assert torch.equal(targets[b, 2:n], tokens[b, : n - 2])
    t2, _ = delayed_copy_batch(4, torch.tensor([5, 3, 9, 9]), 10, 2, torch.Generator().manual_seed(0))
    assert torch.equal(tokens, t2)  # seeded: the same batch again
    tokens, _ = delayed_copy_batch(3, 6, 10, 1, g)
    assert tokens.shape == (3, 6) and (tokens != PAD).all()


@pytest.mark.parametrize(
    "args, exc, match",
    [
        ((0, 5, 10, 2), ValueError, "batch_size must be a positive int, got 0"),
        ((2, 5, 2, 2), ValueError, r"vocab_size must be an int >= 3 \(PAD and at least two symbols\), got 2"),
        ((2, 5, 10, 0), ValueError, "shift must be a positive int, got 0"),
        ((2, 2, 10, 2), ValueError, "lengths must be 2 ints > shift=2, got \\[2, 2\\]"),
        ((2, torch.tensor([4, 5, 6]), 10, 2), ValueError, r"lengths must have shape \(batch_size=2,\), got \(3,\)"),
        (
            (2, torch.tensor([4.0, 5.0]), 10, 2),
            ValueError,
            "lengths must be an integer tensor, got dtype torch.float32",
        ),
        ((2, 5.0, 10, 2), TypeError, "lengths must be a torch.Tensor, got float"),
    ],
)
def test_delayed_copy_bad_input(args, exc, match):
    with pytest.raises(exc, match=match):
        delayed_copy_batch(*args, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("pe", PE_KINDS)
def test_model_shapes_and_attention_maps(pe):
    torch.manual_seed(0)
    model = LengthModel(10, pe, train_len=8, d_model=16, num_heads=2, d_ff=32, num_layers=2).eval()
    tokens = torch.randint(1, 10, (3, 8))
    assert model(tokens).shape == (3, 8, 10)
    maps = model.attention_maps()
    assert len(maps) == 2 and all(m.shape == (3, 2, 8, 8) for m in maps)
    assert torch.allclose(maps[0].sum(-1), torch.ones(3, 2, 8))
    if pe == "learned":
        with pytest.raises(ValueError, match="max_len=8"):
            model(torch.randint(1, 10, (3, 12)))
        assert model(torch.randint(1, 10, (3, 12)), clamp=True).shape == (3, 12, 10)
    else:
        assert model(torch.randint(1, 10, (3, 20))).shape == (3, 20, 10)  # runs past train_len


def test_padding_is_masked():
    torch.manual_seed(0)
    model = LengthModel(10, "rope", train_len=8, d_model=16, num_heads=2, d_ff=32).eval()
    tokens = torch.tensor([[3, 4, 5, 6, PAD, PAD]])
    model(tokens)
    assert (model.attention_maps()[0][..., 4:] == 0).all()
    # real positions do not see how much padding follows
    assert torch.allclose(model(tokens)[:, :4], model(tokens[:, :4]), atol=1e-5)


def test_no_pe_model_is_permutation_equivariant():
    torch.manual_seed(0)
    model = LengthModel(10, "none", train_len=8, d_model=16, num_heads=2, d_ff=32).eval()
    tokens = torch.randint(1, 10, (2, 7))
    perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])
    assert torch.allclose(model(tokens)[:, perm], model(tokens[:, perm]), atol=1e-5)


def test_rotary_attention_at_one_position_is_plain_attention():
    torch.manual_seed(0)
    plain, rope = MultiHeadAttention(16, 4), RotarySelfAttention(16, 4)
    rope.load_state_dict(plain.state_dict())
    x = torch.randn(2, 1, 16)  # position 0: the rotation is the identity
    assert torch.allclose(plain(x, x, x)[0], rope(x, x, x)[0], atol=1e-6)


def test_rotary_attention_scores_depend_only_on_offset():
    torch.manual_seed(0)
    rope = RotarySelfAttention(16, 2)
    x = torch.randn(1, 1, 16).expand(1, 12, 16)  # the same token at every position
    _, w = rope(x, x, x)  # (1, 2, 12, 12)
    # log w[m, n] = score(n - m) - logsumexp(row m): relative to the diagonal it is score(n - m) - score(0)
    rel = torch.log(w[0]) - torch.log(torch.diagonal(w[0], dim1=-2, dim2=-1))[..., None]  # (2, 12, 12)
    for m in range(11):
        assert torch.allclose(rel[:, m + 1, 1:], rel[:, m, :-1], atol=1e-4), f"row {m} vs {m + 1}"
    plain = MultiHeadAttention(16, 2)
    plain.load_state_dict(rope.state_dict())
    _, w_plain = plain(x, x, x)  # without rotation every key looks the same: uniform rows
    assert torch.allclose(w_plain, torch.full_like(w_plain, 1 / 12))


def test_model_bad_input():
    with pytest.raises(ValueError, match="pe_kind must be one of .*'sinusoidal'.*got 'alibi'"):
        LengthModel(10, "alibi", train_len=8)
    with pytest.raises(TypeError, match="pe_kind must be one of .*got NoneType None"):
        LengthModel(10, None, train_len=8)
    with pytest.raises(ValueError, match=r"tokens must hold token ids in \[0, vocab_size=10\), got min 1 and max 10"):
        LengthModel(10, "none", train_len=8)(torch.tensor([[1, 10]]))
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\*\*63\)"):
        train("none", 1, seed=-1)
    with pytest.raises(ValueError, match="train_len must be a positive int, got 0"):
        LengthModel(10, "none", train_len=0)
    with pytest.raises(ValueError, match="steps must be a positive int, got 0"):
        train("none", 0)


def test_training_is_deterministic_and_learns():
    kw = dict(train_len=6, vocab_size=5, d_model=16, num_heads=2, d_ff=32, num_layers=1, batch_size=16)
    m1, l1 = train("sinusoidal", 60, **kw)
    m2, l2 = train("sinusoidal", 60, **kw)
    assert l1 == l2 and len(l1) == 60
    assert all(torch.equal(a, b) for a, b in zip(m1.state_dict().values(), m2.state_dict().values()))
    assert sum(l1[-10:]) / 10 < sum(l1[:10]) / 10  # the loss goes down
    assert not m1.training


def test_evaluate_and_accuracy_by_position():
    torch.manual_seed(0)
    model = LengthModel(16, "learned", train_len=8, d_model=16, num_heads=2, d_ff=32).eval()
    acc = evaluate(model, [4, 8, 12], batch_size=8)
    assert list(acc) == [4, 8, 12] and 0 <= acc[4] <= 1 and 0 <= acc[8] <= 1 and math.isnan(acc[12])
    clamped = evaluate(model, [4, 8, 12], batch_size=8, clamp=True)
    assert clamped[4] == acc[4] and 0 <= clamped[12] <= 1
    pos = accuracy_by_position(model, 8, batch_size=8)
    assert pos.shape == (8,) and torch.isnan(pos[:2]).all() and not torch.isnan(pos[2:]).any()
    assert evaluate(model, [8], batch_size=8) == evaluate(model, [8], batch_size=8)  # fixed eval set


def test_attention_on_source_reads_the_shifted_diagonal():
    from utils.experiments.extrapolation import attention_on_source

    torch.manual_seed(0)
    model = LengthModel(16, "rope", train_len=8, d_model=16, num_heads=2, d_ff=32, num_layers=2).eval()
    got = attention_on_source(model, 10, batch_size=4, seed=5)  # (2, 2, 10)
    assert got.shape == (2, 2, 10) and torch.isnan(got[..., :2]).all()
    tokens, _ = delayed_copy_batch(4, 10, 16, 2, torch.Generator().manual_seed(5))
    model(tokens)
    w = model.attention_maps()[1]  # (4, 2, 10, 10)
    assert torch.isclose(got[1, 0, 7], w[:, 0, 7, 5].mean())


# --- absolute copy, sinusoidal+offsets, the stored seeds and the figures -------------------------


def test_absolute_copy_targets_are_the_anchor_token():
    from utils.experiments.extrapolation import absolute_copy_batch, task_batch

    tokens, targets = absolute_copy_batch(3, torch.tensor([6, 9, 7]), 10, 4, torch.Generator().manual_seed(1))
    for b, n in enumerate([6, 9, 7]):
        assert (targets[b, :4] == tokens[b, 4]).all() and (targets[b, 5:n] == tokens[b, 4]).all()
        assert targets[b, 4] == IGNORE and (targets[b, n:] == IGNORE).all()
    same = task_batch("absolute", 3, torch.tensor([6, 9, 7]), 10, 4, torch.Generator().manual_seed(1))
    assert torch.equal(same[0], tokens) and torch.equal(same[1], targets)
    copy = task_batch("copy", 3, 6, 10, 2, torch.Generator().manual_seed(1))
    assert torch.equal(copy[1][:, 2:], copy[0][:, :-2])
    with pytest.raises(ValueError, match="task must be one of .*got 'reverse'"):
        task_batch("reverse", 3, 6, 10, 2, torch.Generator())
    with pytest.raises(ValueError, match="lengths must be 2 ints > shift=4"):
        absolute_copy_batch(2, 4, 10, 4, torch.Generator())


def test_offsets_shift_the_sinusoidal_table():
    torch.manual_seed(0)
    model = LengthModel(10, "sinusoidal+offsets", train_len=8, d_model=16, num_heads=2, d_ff=32).eval()
    tokens = torch.randint(1, 10, (2, 5))
    base = model(tokens)
    assert torch.equal(base, model(tokens, offsets=torch.tensor([0, 0])))
    moved = model(tokens, offsets=torch.tensor([3, 0]))
    assert not torch.allclose(moved[0], base[0]) and torch.allclose(moved[1], base[1])
    # at offset 3 the model sees the table's rows 3..7: the same as adding them by hand
    x = model.embed(tokens[:1]) + model.table[3:8]
    h = model.encoder(x, torch.ones(1, 1, 5, dtype=torch.bool))
    assert torch.allclose(model.readout(h), moved[:1], atol=1e-5)
    for bad, words in (
        (torch.tensor([0, -1]), "offsets must be 2 ints"),
        (torch.tensor([0, 1020]), "offsets must be 2 ints"),
        (torch.tensor([0.0, 1.0]), "offsets must be an integer tensor"),
        (torch.tensor([1]), r"offsets must have shape \(batch=2,\)"),
    ):
        with pytest.raises(ValueError, match=words):
            model(tokens, offsets=bad)
    with pytest.raises(ValueError, match="offsets apply to pe_kind='sinusoidal\\+offsets' only"):
        LengthModel(10, "rope", train_len=8, d_model=16, num_heads=2, d_ff=32)(tokens, offsets=torch.tensor([1, 1]))


def test_train_with_offsets_and_absolute_task():
    kw = dict(train_len=6, vocab_size=5, d_model=16, num_heads=2, d_ff=32, num_layers=1, batch_size=8)
    m1, l1 = train("sinusoidal+offsets", 5, **kw)
    m2, l2 = train("sinusoidal", 5, **kw)
    assert len(l1) == 5 and l1 != l2  # same seed, but the offsets change what the model sees
    _, l3 = train("learned", 5, task="absolute", shift=3, **kw)
    assert len(l3) == 5
    with pytest.raises(ValueError, match=r"max_position must be an int >= 6 \(train_len=6\), got 4"):
        train("sinusoidal+offsets", 5, max_position=4, **kw)
    with pytest.raises(ValueError, match="task must be one of"):
        train("none", 5, task="sort", **kw)
    acc = evaluate(m1, [4, 8], vocab_size=5, batch_size=8, task="absolute")
    assert set(acc) == {4, 8} and all(0 <= a <= 1 for a in acc.values())


def test_copy_head_finds_the_head_and_measures_it():
    from utils.experiments.extrapolation import attention_on_source, copy_head

    torch.manual_seed(0)
    model = LengthModel(16, "rope", train_len=8, d_model=16, num_heads=2, d_ff=32, num_layers=2).eval()
    h = copy_head(model, 20, 8)
    w = attention_on_source(model, 20)  # (2, 2, 20)
    best = w[..., 2:8].mean(-1)
    assert (h["layer"], h["head"]) == divmod(int(best.argmax()), 2)
    row = w[h["layer"], h["head"]]
    assert math.isclose(h["seen"], row[2:8].mean().item(), rel_tol=1e-6)
    assert math.isclose(h["unseen"], row[8:].mean().item(), rel_tol=1e-6)
    assert math.isclose(h["lost"], 1 - row[2:].mean().item(), rel_tol=1e-6)
    assert 0 <= h["far"] <= 1 and 0 <= h["at_train_len"] <= 1


def test_stored_seed_runs_are_complete():
    from utils.experiments.extrapolation import TASKS, load_seed_runs

    runs = load_seed_runs()
    assert len(runs["seeds"]) >= 3 and "extrapolation_seeds.py" in runs["command"]
    for task in TASKS:
        for pe in PE_KINDS:
            assert sorted(runs["runs"][task][pe]) == sorted(str(s) for s in runs["seeds"]), (task, pe)
    with pytest.raises(FileNotFoundError, match="recreate it with"):
        load_seed_runs("/nonexistent/extrapolation_seeds.json")


def test_seed_range_accuracy_ranges_and_in_range():
    from utils.experiments.extrapolation import accuracy_ranges, in_range, seed_range

    assert seed_range([0.5, 1.0, 0.0]) == (0.5, 0.0, 1.0)
    with pytest.raises(ValueError, match="non-empty"):
        seed_range([])
    runs = {
        "runs": {
            "copy": {"learned": {"0": {"accuracy": {"4": 0.2, "8": 0.5}}, "1": {"accuracy": {"4": 0.4, "8": 0.7}}}}
        }
    }
    got = accuracy_ranges(runs, "copy", ["learned (clamped)"])
    assert got["learned (clamped)"][8] == pytest.approx((0.6, 0.5, 0.7))
    assert in_range(0.45, (0.6, 0.5, 0.7), 0.1) and not in_range(0.35, (0.6, 0.5, 0.7), 0.1)


def test_figures_use_one_colour_per_variant():
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import to_rgba

    from utils.figures.extrapolation import COLORS, plot_accuracy_ranges, plot_copy_heads, plot_position_accuracy

    ranges = {
        "rope": {8: (0.9, 0.8, 1.0), 16: (0.5, 0.4, 0.6)},
        "learned (clamped)": {8: (1.0, 1.0, 1.0), 16: (0.3, 0.2, 0.3)},
    }
    fig = plot_accuracy_ranges(ranges, 8, chance=0.1, live={"rope": {8: 0.85, 16: 0.55}})
    ax = fig.axes[0]
    bars = {c.get_label(): c.lines[0] for c in ax.containers}  # errorbar containers: label -> data line
    assert {k: to_rgba(l.get_color()) for k, l in bars.items()} == {
        "rope (mean, min-max)": to_rgba(COLORS["rope"]),
        "learned (clamped) (mean, min-max)": to_rgba(COLORS["learned"]),
    }
    assert np.allclose(bars["rope (mean, min-max)"].get_ydata(), [0.9, 0.5])
    assert bars["learned (clamped) (mean, min-max)"].get_linestyle() == "--"
    hollow = [l for l in ax.lines if l.get_markerfacecolor() == "none" and len(l.get_xdata())]
    assert len(hollow) == 1 and np.allclose(hollow[0].get_ydata(), [0.85, 0.55])
    plt.close(fig)
    fig = plot_position_accuracy({"none": torch.tensor([math.nan, 0.5, 0.2])}, 2)
    assert to_rgba(fig.axes[0].lines[0].get_color()) == to_rgba(COLORS["none"])
    assert fig.axes[0].get_legend_handles_labels()[1][0] == "positions 0..1: seen in training"
    plt.close(fig)
    fig = plot_position_accuracy({"none": torch.tensor([0.5, 0.2, 0.1])}, 3, max_position=24)
    assert fig.axes[0].get_legend_handles_labels()[1][0] == (
        "positions 0..2: seen in training\n(sinusoidal+offsets saw 0..23)"
    )
    plt.close(fig)
    with pytest.raises(ValueError, match=r"max_position must be an int >= 3 \(train_len=3\), got 2"):
        plot_position_accuracy({"none": torch.tensor([0.5])}, 3, max_position=2)
    with pytest.raises(TypeError, match="train_len must be an int"):
        plot_position_accuracy({"none": torch.tensor([0.5])}, 2.5)
    fig = plot_copy_heads([np.eye(4), np.full((4, 4), 0.25)], ["x", "y"], train_len=2)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["x", "y"] and len(fig.axes) == 3  # two maps + colorbar
    assert np.array_equal(fig.axes[1].images[0].get_array(), np.full((4, 4), 0.25))
    plt.close(fig)
    for bad, error in (({}, ValueError), (None, TypeError)):
        with pytest.raises(error, match="ranges must be a non-empty dict"):
            plot_accuracy_ranges(bad, 8)
        with pytest.raises(error, match="by_position must be a non-empty dict"):
            plot_position_accuracy(bad, 8)
    with pytest.raises(ValueError, match=r"maps\[0\] must have shape \(T_q, T_k\), got \(3,\)"):
        plot_copy_heads([np.ones(3)], ["a"], 2)
    with pytest.raises(ValueError, match=r"titles must have shape \(one per map=1,\), got \(2,\)"):
        plot_copy_heads([np.eye(3)], ["a", "b"], 2)


def test_weight_bars_one_bar_per_variant_and_measurement():
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import to_rgba

    from utils.figures.extrapolation import COLORS, plot_weight_bars

    ranges = {
        "sinusoidal": {"a": (0.9, 0.8, 1.0), "b": (0.1, 0.0, 0.2)},
        "rope": {"a": (0.7, 0.6, 0.8), "b": (0.5, 0.3, 0.6)},
    }
    fig = plot_weight_bars(ranges, live={"rope": {"a": 0.75, "b": 0.4}}, title="t")
    ax = fig.axes[0]
    bars = {c.get_label(): c for c in ax.containers if hasattr(c, "patches")}
    assert set(bars) == {"sinusoidal (mean, min-max)", "rope (mean, min-max)"}
    assert np.allclose([p.get_height() for p in bars["rope (mean, min-max)"].patches], [0.7, 0.5])
    assert to_rgba(bars["rope (mean, min-max)"].patches[0].get_facecolor(), 1) == to_rgba(COLORS["rope"])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"] and ax.get_title() == "t"
    hollow = [l for l in ax.lines if l.get_markerfacecolor() == "none" and len(l.get_xdata())]
    assert len(hollow) == 1 and np.allclose(hollow[0].get_ydata(), [0.75, 0.4])
    plt.close(fig)
    for bad, error in (({}, ValueError), (None, TypeError)):
        with pytest.raises(error, match="ranges must be a non-empty dict"):
            plot_weight_bars(bad)


def test_largest_change_compares_shared_runs_only():
    from utils.experiments.extrapolation import largest_change

    runs = {"runs": {"copy": {"rope": {"0": {"accuracy": {"4": 0.5, "8": 0.25}}, "1": {"accuracy": {"4": 0.9}}}}}}
    rerun = {"runs": {"copy": {"rope": {"0": {"accuracy": {"4": 0.5, "8": 0.375}}, "7": {"accuracy": {"4": 0.0}}}}}}
    assert largest_change(runs, rerun) == 0.125  # seed 7 is not in runs: skipped
    with pytest.raises(ValueError, match="share no"):
        largest_change(runs, {"runs": {"copy": {"rope": {"7": {"accuracy": {"4": 0.0}}}}}})


def test_largest_change_compares_position_ranges_and_copy_head_weights_not_labels():
    from utils.experiments.extrapolation import largest_change

    head = {"layer": 0, "head": 1, "seen": 0.9, "far": 0.2}
    runs = {"runs": {"copy": {"rope": {"0": {"by_position": {"0..15": 0.8}, "copy_head": head}}}}}
    moved = {"layer": 1, "head": 3, "seen": 0.85, "far": 0.2}  # another head picked: a label, not a change
    rerun = {"runs": {"copy": {"rope": {"0": {"by_position": {"0..15": 0.7}, "copy_head": moved}}}}}
    assert largest_change(runs, rerun, "by_position") == pytest.approx(0.1)
    assert largest_change(runs, rerun, "copy_head") == pytest.approx(0.05)
    with pytest.raises(ValueError, match="share no"):
        largest_change(runs, rerun, "accuracy")  # neither run stored accuracy
    with pytest.raises(ValueError, match="field"):
        largest_change(runs, rerun, "loss")

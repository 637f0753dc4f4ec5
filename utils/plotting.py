"""Pure plotting functions: each draws a figure from numbers and returns it (widgets wrap them)."""

import matplotlib.pyplot as plt
import numpy as np

from utils.positional import sinusoidal_encoding


def plot_pe_heatmap(max_len=100, d_model=128, base=10000.0, position=10):
    """Heatmap of the PE table (position x dimension) with one position's vector drawn below it."""
    pe = sinusoidal_encoding(max_len, d_model, base).numpy()  # (max_len, d_model)
    if not 0 <= position < max_len:
        raise ValueError(f"position must be in [0, max_len={max_len}), got {position}")
    fig, (ax_map, ax_vec) = plt.subplots(
        2, 1, figsize=(8, 6), height_ratios=[3, 1], layout="constrained"
    )
    im = ax_map.imshow(pe, aspect="auto", cmap="RdBu", vmin=-1, vmax=1, interpolation="nearest")
    ax_map.axhline(position, color="black", lw=1.5)
    ax_map.set(title=f"Sinusoidal PE, d_model={d_model}, base={base:g}", xlabel="dimension",
               ylabel="position")
    fig.colorbar(im, ax=ax_map, shrink=0.8)
    ax_vec.plot(np.arange(d_model), pe[position], lw=1, color="black")
    ax_vec.set(xlim=(0, d_model - 1), ylim=(-1.1, 1.1), xlabel="dimension",
               title=f"PE({position})")
    return fig


# --- lesson 08: length extrapolation ---


def plot_accuracy_vs_length(accuracy, train_len, chance=None, dashed=(), ax=None):
    """One line per model ({name: {test length: accuracy}}) with the training range 1..train_len shaded.

    NaN accuracies (a model that cannot run at that length) leave a gap; names in `dashed` are dashed.
    """
    if not isinstance(accuracy, dict) or not accuracy:
        raise ValueError(f"accuracy must be a non-empty dict {{name: {{length: accuracy}}}}, got {accuracy!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    ax.axvspan(0, train_len, color="0.9", label=f"training lengths (<= {train_len})")
    for name, by_length in accuracy.items():
        lengths = sorted(by_length)
        ax.plot(lengths, [by_length[n] for n in lengths], marker="o", ms=4, label=name,
                ls="--" if name in dashed else "-", zorder=2 if name in dashed else 3)
    if chance is not None:
        ax.axhline(chance, color="black", lw=0.8, ls=":", label=f"chance ({chance:.2f})")
    ax.set(xlabel="test sequence length", ylabel="token accuracy", ylim=(0, 1.03),
           xlim=(0, max(max(d) for d in accuracy.values()) + 1))
    ax.legend(loc="lower left", fontsize=8)
    return ax.figure


def plot_attention_maps(maps, titles, train_len=None):
    """A row of attention maps (query x key), with dashed lines where positions pass train_len."""
    maps = [np.asarray(m, dtype=float) for m in maps]
    if not maps or any(m.ndim != 2 for m in maps) or len(titles) != len(maps):
        raise ValueError(f"maps must be 2-D arrays, one per title; got {len(maps)} maps, {len(titles)} titles")
    fig, axes = plt.subplots(1, len(maps), figsize=(4.2 * len(maps), 4), layout="constrained", squeeze=False)
    for ax, m, title in zip(axes[0], maps, titles):
        ax.imshow(m, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
        if train_len is not None:
            ax.axvline(train_len - 0.5, color="white", ls="--", lw=1)
            ax.axhline(train_len - 0.5, color="white", ls="--", lw=1)
        ax.set(title=title, xlabel="key position", ylabel="query position")
    return fig

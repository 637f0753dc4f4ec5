"""Lesson 08's figures of the extrapolation experiment (utils.experiments.extrapolation): accuracy per length
and per position, copy heads' attention maps and their weights, one colour and marker per variant."""

import matplotlib.pyplot as plt
import numpy as np

from utils import validation

# One colour and marker per variant, in every figure of lesson 08.
COLORS = {
    "sinusoidal": "tab:blue",
    "learned": "tab:orange",
    "learned (clamped)": "tab:orange",
    "none": "tab:gray",
    "rope": "tab:green",
    "sinusoidal+offsets": "tab:purple",
}
MARKERS = {
    "sinusoidal": "o",
    "learned": "s",
    "learned (clamped)": "s",
    "none": "x",
    "rope": "^",
    "sinusoidal+offsets": "D",
}


def plot_accuracy_ranges(ranges, train_len, chance=None, live=None, title=None, ax=None):
    """Mean over seeds with min-max error bars per variant ({name: {length: (mean, lo, hi)}}), shaded training range.

    Variants are nudged sideways by up to 0.6 of a length so that equal values do not hide each other; `live`
    ({name: {length: accuracy}}) adds one seed's values as hollow markers.
    """
    validation.non_empty("ranges", ranges, dict, "dict {name: {length: (mean, lo, hi)}}")
    if ax is None:
        _, ax = plt.subplots(figsize=(10.5, 4.5), layout="constrained")
    ax.axvspan(0, train_len, color="0.92", label=f"training lengths (<= {train_len})")
    for i, (name, by_length) in enumerate(ranges.items()):
        dx = 0.3 * (i - (len(ranges) - 1) / 2)
        x = np.array(sorted(by_length), dtype=float)
        mean, lo, hi = (np.array([by_length[n][j] for n in sorted(by_length)]) for j in range(3))
        ax.errorbar(
            x + dx,
            mean,
            yerr=[mean - lo, hi - mean],
            color=COLORS[name],
            marker=MARKERS[name],
            ms=5,
            capsize=2.5,
            lw=1.4,
            ls="--" if "clamped" in name else "-",
            label=f"{name} (mean, min-max)",
        )
        if live and name in live:
            ax.plot(
                x + dx,
                [live[name][int(n)] for n in x],
                ls="none",
                marker=MARKERS[name],
                ms=9,
                mfc="none",
                mec=COLORS[name],
                mew=1,
            )
    if live:
        ax.plot([], [], ls="none", marker="o", ms=9, mfc="none", mec="black", label="hollow: the model trained above")
    if chance is not None:
        ax.axhline(chance, color="black", lw=0.8, ls=":", label=f"chance ({chance:.2f})")
    ax.set(xlabel="test sequence length", ylabel="token accuracy", ylim=(0, 1.04), title=title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return ax.figure


def plot_position_accuracy(by_position, train_len, title=None, max_position=None):
    """Accuracy at each position t ({name: (length,) tensor}), one colour and marker per variant; positions
    0 .. train_len - 1 shaded as seen in training (by sinusoidal+offsets, 0 .. max_position - 1, if given)."""
    validation.non_empty("by_position", by_position, dict, "dict {name: (length,) tensor}")
    train_len = validation.positive_int("train_len", train_len)
    label = f"positions 0..{train_len - 1}: seen in training"
    if max_position is not None:
        max_position = validation.integer("max_position", max_position, minimum=train_len, why=f"train_len={train_len}")
        label += f"\n(sinusoidal+offsets saw 0..{max_position - 1})"
    fig, ax = plt.subplots(figsize=(10.5, 4), layout="constrained")
    ax.axvspan(-0.5, train_len - 0.5, color="0.92", label=label)
    for i, (name, acc) in enumerate(by_position.items()):
        acc = np.asarray(acc, dtype=float)
        ax.plot(
            np.arange(len(acc)),
            acc,
            color=COLORS[name],
            marker=MARKERS[name],
            ms=4,
            markevery=(i, 4),
            ls="--" if "clamped" in name else "-",
            lw=1.2,
            label=name,
        )
    ax.set(xlabel=f"position t in a length-{len(acc)} sequence", ylabel="accuracy at t", ylim=(0, 1.04), title=title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return fig


def plot_copy_heads(maps, titles, train_len):
    """A row of attention maps (query x key) on one colour scale with its colorbar; dashed where training stopped."""
    maps = [
        validation.shape(f"maps[{i}]", np.asarray(m, dtype=float), ("T_q", "T_k"))
        for i, m in enumerate(validation.non_empty("maps", maps, (list, tuple), "list of 2-D arrays"))
    ]
    validation.shape("titles", np.asarray(titles, dtype=object), (("one per map", len(maps)),))
    fig, axes = plt.subplots(1, len(maps), figsize=(3.9 * len(maps) + 0.8, 4), layout="constrained", squeeze=False)
    for ax, m, title in zip(axes[0], maps, titles):
        image = ax.imshow(m, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
        ax.axvline(train_len - 0.5, color="white", ls="--", lw=1)
        ax.axhline(train_len - 0.5, color="white", ls="--", lw=1)
        ax.set(title=title, xlabel="key position n", ylabel="query position m")
    fig.colorbar(image, ax=list(axes[0]), label="attention weight", shrink=0.85)
    return fig


def plot_weight_bars(ranges, live=None, title=None, ylabel="attention weight"):
    """Grouped bars: one group per measurement, one bar per variant ({name: {measurement: (mean, lo, hi)}}).

    Bars show the mean over seeds with min-max error bars; `live` ({name: {measurement: value}}) adds one
    seed's values as hollow markers. Measurements are the keys of the first variant, in their order.
    """
    validation.non_empty("ranges", ranges, dict, "dict {name: {measurement: (mean, lo, hi)}}")
    labels = list(next(iter(ranges.values())))
    width = 0.8 / len(ranges)
    fig, ax = plt.subplots(figsize=(10.5, 4), layout="constrained")
    for i, (name, by_label) in enumerate(ranges.items()):
        x = np.arange(len(labels)) + width * (i - (len(ranges) - 1) / 2)
        mean, lo, hi = (np.array([by_label[label][j] for label in labels]) for j in range(3))
        ax.bar(x, mean, width, color=COLORS[name], alpha=0.75, label=f"{name} (mean, min-max)")
        ax.errorbar(x, mean, yerr=[mean - lo, hi - mean], ls="none", color="black", capsize=3, lw=1)
        if live and name in live:
            values = [live[name][label] for label in labels]
            ax.plot(x, values, ls="none", marker=MARKERS[name], ms=9, mfc="none", mec="black", mew=1)
    if live:
        ax.plot([], [], ls="none", marker="o", ms=9, mfc="none", mec="black", label="hollow: the model trained above")
    ax.set_xticks(np.arange(len(labels)), labels)
    ax.set(ylabel=ylabel, ylim=(0, 1.04), title=title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return fig

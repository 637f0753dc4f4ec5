"""Lesson 06's figures: the axes of batch norm and layer norm, and the norm probes (utils.experiments.norm_probes):
per-layer values, the last-layer gradient gap and loss curves."""

import matplotlib.pyplot as plt
import numpy as np
import torch

from utils import validation
from utils.experiments.norm_probes import depths_of

# One colour (and marker) per norm placement, used by every figure of lesson 06.
VARIANT_STYLE = {
    "post-norm": dict(color="tab:red", marker="o", ls="-"),
    "pre-norm": dict(color="tab:blue", marker="s", ls="--"),
}


def _variant_arrays(name, values, shape):
    """Check a dict 'post-norm'/'pre-norm' -> 2-D array `shape`; return it with float arrays."""
    validation.non_empty(name, values, dict, "dict of variant -> array")
    for k in values:
        validation.choice(f"a key of {name}", k, VARIANT_STYLE)
    return {k: validation.shape(f"{name}[{k!r}]", np.asarray(v, dtype=float), shape) for k, v in values.items()}


def plot_per_layer(values, ylabel, title, ax=None, logy=False):
    """Median over seeds (line) and min-max band per layer for each variant in `values`
    (a dict 'post-norm'/'pre-norm' -> array (seeds, num_layers))."""
    values = _variant_arrays("values", values, ("seeds", "num_layers"))
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
    for name, v in values.items():
        layers = np.arange(1, v.shape[1] + 1)
        style = VARIANT_STYLE[name]
        ax.fill_between(layers, v.min(0), v.max(0), color=style["color"], alpha=0.2, lw=0)
        ax.plot(layers, np.median(v, 0), label=f"{name} (median, band: min-max over {len(v)} seeds)", ms=4, **style)
    if logy:
        ax.set_yscale("log")
    ax.set(xlabel="layer", ylabel=ylabel, title=title)
    ax.legend(fontsize=8)
    return ax


def plot_loss_curves(losses, title, ax=None, chance=None):
    """One thin line per seed for each variant in `losses` (a dict 'post-norm'/'pre-norm' -> array
    (seeds, steps)), in the variant's colour; an optional dotted line at the chance-level loss."""
    losses = _variant_arrays("losses", losses, ("seeds", "steps"))
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.2), layout="constrained")
    for name, curves in losses.items():
        style = VARIANT_STYLE[name]
        for i, curve in enumerate(curves):
            ax.plot(
                np.arange(1, len(curve) + 1),
                curve,
                color=style["color"],
                ls=style["ls"],
                lw=1.2,
                alpha=0.8,
                label=f"{name} ({len(curves)} seeds)" if i == 0 else None,
            )
    if chance is not None:
        ax.axhline(chance, color="gray", ls=":", lw=1, label="chance level")
    ax.set(xlabel="training step", ylabel="loss", title=title)
    ax.legend(fontsize=8)
    return ax


def plot_gradient_gap(grads, rms, ratio, layers, depth=24):
    """Two panels: the per-layer gradients of the `depth`-layer stacks (median and min-max band per variant),
    and at every depth the last-layer gap post / pre (`ratio`, from gradient_gap) next to pre-norm's stream
    RMS before the final norm (from probe_stacks); `layers` names the kind of layer in the title."""
    depths = depths_of("grads", grads)
    validation.non_empty("ratio", ratio, dict, "dict of num_layers -> array (seeds,)")
    if sorted(ratio) != depths or depths_of("rms", rms) != depths:
        raise ValueError(f"ratio and rms must have the depths of grads {depths}, got {sorted(ratio)}")
    validation.choice("depth", depth, depths)
    validation.instance("layers", layers, str)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
    per_layer = {name: grads[name, depth] for name in VARIANT_STYLE}
    plot_per_layer(
        per_layer, "gradient norm of the layer", f"Gradients, {depth} {layers} layers", ax=axes[0], logy=True
    )
    shift = 0.015 * depths[-1]  # side by side at each depth, so neither marker hides the other
    for L in depths:
        first = L == depths[0]
        gap = np.asarray(ratio[L], dtype=float)
        axes[1].plot([L - shift] * len(gap), gap, "k^", ms=5, label="post / pre, last layer" if first else None)
        stream = np.asarray(rms["pre-norm", L], dtype=float)[:, -1]
        axes[1].plot(
            [L + shift] * len(stream),
            stream,
            ms=7,
            mfc="none",
            label="pre-norm stream RMS" if first else None,
            **{**VARIANT_STYLE["pre-norm"], "ls": "none"},
        )
    axes[1].set(xlabel="number of layers", xticks=depths, ylabel="factor", yscale="log")
    axes[1].set_title("Last-layer gap, post / pre, next to pre-norm's stream RMS")
    axes[1].legend(fontsize=8)
    return fig


def plot_norm_axes(raw, batch_normed, layer_normed):
    """Three heatmaps of one (items, features) batch, with their numbers: raw, batch-normed (one column
    outlined: a group that shares a mean and variance) and layer-normed (one row outlined)."""
    panels = []
    for name, values in (("raw", raw), ("batch_normed", batch_normed), ("layer_normed", layer_normed)):
        validation.instance(name, values, (np.ndarray, torch.Tensor), "2-D array or tensor")
        panels.append(validation.shape(name, np.asarray(values, dtype=float), ("items", "features")))
    if not panels[0].shape == panels[1].shape == panels[2].shape:
        raise ValueError(f"raw, batch_normed and layer_normed must have one shape, got {[p.shape for p in panels]}")
    items, features = panels[0].shape
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.2), layout="constrained")
    titles = ["the slide deck's raw batch", "batch norm: mean 0 per column", "layer norm: mean 0 per row"]
    for k, (ax, values, title) in enumerate(zip(axes, panels, titles)):
        limit = None if k == 0 else 2
        im = ax.imshow(values, cmap="RdBu_r" if limit else "Greys", vmin=-limit if limit else 0, vmax=limit)
        fig.colorbar(im, ax=ax, shrink=0.8, label="value")
        labels = [f"item {i + 1}" for i in range(items)]
        ax.set(title=title, xticks=range(features), yticks=range(items), yticklabels=labels, xlabel="feature")
        dark_from = 0.6 * values.max() if limit is None else 1.3  # white text on dark cells
        for (i, j), v in np.ndenumerate(values):
            text = f"{v:.0f}" if limit is None else f"{v:.2f}"
            dark = abs(v) > dark_from
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    # outline one group of shared statistics in each: a column for batch norm, a row for layer norm
    axes[1].add_patch(plt.Rectangle((-0.5, -0.5), 1, items, fill=False, lw=3, color="black"))
    axes[2].add_patch(plt.Rectangle((-0.5, -0.5), features, 1, fill=False, lw=3, color="black"))
    return fig

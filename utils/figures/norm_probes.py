"""Lesson 06's figures of the norm probes (utils.experiments.norm_probes): per-layer values and loss curves."""

import matplotlib.pyplot as plt
import numpy as np

from utils import validation

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

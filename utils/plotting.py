"""Pure plotting functions: each draws a figure from numbers and returns it (widgets wrap them)."""

import numbers

import matplotlib.pyplot as plt
import numpy as np

from utils.positional import sinusoidal_encoding


def check_position(position, max_len):
    """Raise unless `position` is an int row index of a table with `max_len` rows."""
    if isinstance(position, bool) or not isinstance(position, numbers.Integral):
        raise TypeError(f"position must be an int, got {type(position).__name__} {position!r}")
    if not 0 <= position < max_len:
        raise ValueError(f"position must be in [0, max_len={max_len}), got {position}")


def plot_pe_heatmap(max_len=100, d_model=128, base=10000.0, position=10):
    """Heatmap of the PE table (position x dimension) with one position's vector drawn below it."""
    pe = sinusoidal_encoding(max_len, d_model, base).numpy()  # (max_len, d_model); checks the sizes
    check_position(position, max_len)
    fig, (ax_map, ax_vec) = plt.subplots(
        2, 1, figsize=(8, 6), height_ratios=[3, 1], layout="constrained"
    )
    im = ax_map.imshow(pe, aspect="auto", cmap="RdBu", vmin=-1, vmax=1, interpolation="nearest")
    ax_map.axhline(position, color="black", lw=1.5, label=f"position {position}")
    ax_map.set(title=f"Sinusoidal PE: {max_len} positions x d_model={d_model}, base={base:g}",
               xlabel="dimension (even: sin, odd: cos; frequency falls to the right)",
               ylabel="position (pos)")
    fig.colorbar(im, ax=ax_map, shrink=0.8, label="PE(pos, dimension)")
    ax_vec.plot(np.arange(d_model), pe[position], lw=1, color="black")
    ax_vec.set(xlim=(0, d_model - 1), ylim=(-1.1, 1.1), xlabel="dimension",
               title=f"PE({position})")
    return fig

"""Pure plotting functions: each draws a figure from numbers and returns it (widgets wrap them)."""

import numbers

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

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
    # Fixed margins: a constrained layout would nearly double the work of every slider redraw.
    fig, (ax_map, ax_vec) = plt.subplots(
        2, 1, figsize=(8, 6), height_ratios=[3, 1],
        gridspec_kw=dict(left=0.085, right=0.87, top=0.95, bottom=0.08, hspace=0.42),
    )
    im = ax_map.imshow(pe, aspect="auto", cmap="RdBu", vmin=-1, vmax=1, interpolation="nearest")
    ax_map.axhline(position, color="black", lw=1.5, label=f"position {position}")
    ax_map.set(title=f"Sinusoidal PE: {max_len} positions x d_model={d_model}, base={base:g}",
               xlabel="dimension (even: sin, odd: cos; frequency falls to the right)",
               ylabel="position (pos)")
    map_box = ax_map.get_position()
    colorbar_ax = fig.add_axes([0.89, map_box.y0 + 0.1 * map_box.height, 0.02, 0.8 * map_box.height])
    fig.colorbar(im, cax=colorbar_ax, label="PE(pos, dimension)")
    for axis in (ax_map.xaxis, ax_map.yaxis, ax_vec.xaxis):  # dimensions and positions are whole numbers
        axis.set_major_locator(MaxNLocator(integer=True))
    ax_vec.plot(np.arange(d_model), pe[position], lw=1, color="black")
    ax_vec.set(xlim=(0, d_model - 1), ylim=(-1.1, 1.1), xlabel="dimension",
               title=f"PE({position})")
    return fig

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


# --- lesson 02: dot-product identities ---

import math  # noqa: E402

import torch  # noqa: E402

from utils import validation  # noqa: E402
from utils.positional import angular_frequencies  # noqa: E402


def offset_dot_products(d_model, base=10000.0, k=10, num_t=60):
    """(t, PE_t . PE_{t+k}) for num_t positions t with t, t + k >= 0, read off the PE table (float64)."""
    d_model = validation.even_positive_int("d_model", d_model)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an int offset, got {type(k).__name__} {k!r}")
    num_t = validation.positive_int("num_t", num_t)
    k = int(k)
    pe = sinusoidal_encoding(num_t + abs(k), d_model, base, dtype=torch.float64).numpy()  # (num_t+|k|, d_model)
    t = np.arange(max(0, -k), max(0, -k) + num_t)  # (num_t,) positions whose t + k is in the table
    return t, np.einsum("td,td->t", pe[t], pe[t + k])  # (num_t,), (num_t,)


def plot_offset_explorer(d_model=64, base=10000.0, k=10, pair=0, t=3, max_offset=60):
    """Three panels: PE_t . PE_{t+k} against t (flat), against the offset (k marked), one pair's rotation."""
    d_model = validation.even_positive_int("d_model", d_model)
    base = validation.positive_float("base", base)
    max_offset = validation.positive_int("max_offset", max_offset)
    if isinstance(pair, bool) or not isinstance(pair, (int, np.integer)) or not 0 <= pair < d_model // 2:
        raise ValueError(f"pair must be an int in [0, d_model/2={d_model // 2}), got {pair!r}")
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 0:
        raise ValueError(f"t must be an int >= 0 (a position), got {t!r}")
    ts, dots = offset_dot_products(d_model, base, k)  # (num_t,), (num_t,)
    w = angular_frequencies(d_model, base).numpy()  # (d_model/2,)
    offsets = np.arange(-max_offset, max_offset + 1)  # (2*max_offset+1,)
    by_offset = np.cos(np.outer(offsets, w)).sum(axis=1)  # (2*max_offset+1,) sum_i cos(w_i j)
    expected = float(np.cos(w * k).sum())

    # Fixed margins instead of layout="constrained": the layout pass would double the redraw time.
    fig, (ax_t, ax_k, ax_rot) = plt.subplots(1, 3, figsize=(13, 4), gridspec_kw=dict(
        left=0.05, right=0.985, bottom=0.13, top=0.85, wspace=0.28, width_ratios=[1, 1, 0.8]))
    ax_t.plot(ts, dots, color="C0", lw=2, label="PE_t . PE_t+k")
    ax_t.axhline(expected, color="C1", lw=1, ls="--", label="sum_i cos(w_i k)")
    ax_t.legend(loc="lower right", fontsize=8)
    ax_t.set(xlabel="position t", ylabel="dot product", title=f"against t at k={k}: flat",
             ylim=(-d_model / 2 * 1.1, d_model / 2 * 1.1))
    ax_k.plot(offsets, by_offset, color="C1", lw=1.5, label="sum_i cos(w_i j)")
    ax_k.plot([k], [expected], "o", color="C0", ms=8, label="chosen k")
    ax_k.axvline(k, color="C0", lw=0.8, ls="--")
    ax_k.set(xlabel="offset j", ylabel="dot product", title="against the offset: symmetric in j",
             ylim=(-d_model / 2 * 1.1, d_model / 2 * 1.1))

    wi = float(w[pair])
    p0 = np.array([np.sin(wi * t), np.cos(wi * t)])  # (2,) columns (2i, 2i+1) of PE_t
    p1 = np.array([np.sin(wi * (t + k)), np.cos(wi * (t + k))])  # (2,) of PE_{t+k}
    circle = np.linspace(0, 2 * np.pi, 200)
    ax_rot.plot(np.sin(circle), np.cos(circle), color="0.8", lw=1, label="unit circle")
    ax_rot.plot([0, p0[0]], [0, p0[1]], "-o", color="C2", markevery=[1], label=f"PE_{t}")
    ax_rot.plot([0, p1[0]], [0, p1[1]], "-o", color="C3", markevery=[1], label=f"PE_{t + k}")
    a0 = wi * t  # angle of PE_t's point, clockwise from the cos axis; PE_{t+k} is w_i k further
    arc = np.linspace(a0, a0 + math.remainder(wi * k, 2 * math.pi), 100)  # the shorter way round
    ax_rot.plot(0.35 * np.sin(arc), 0.35 * np.cos(arc), color="black", lw=1, label="angle w_i k")
    ax_rot.set(xlim=(-1.2, 1.2), ylim=(-1.2, 1.2), aspect="equal",
               xlabel=f"sin(w_{pair} t)  (column {2 * pair})", ylabel=f"cos(w_{pair} t)  (column {2 * pair + 1})",
               title=f"pair {pair}: w={wi:.3g}, w k={wi * k:.3g} rad")
    ax_rot.legend(loc="lower left", fontsize=7)
    fig.suptitle(f"PE_t . PE_t+k = sum_i cos(w_i k) = {expected:.3f}   (d_model={d_model}, base={base:g})")
    return fig

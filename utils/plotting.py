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


# --- lesson 03: attention-map explorer (lesson 04 uses its mask control) ---
from utils.attention_map import as_tokens, attention_map  # noqa: E402  (append-only file)


def plot_attention(tokens, weights, query=None, mask=None, title="attention weights"):
    """Heatmap of weights (T_q, T_k) labelled by tokens, and, if `query` is given, that row as bars.

    Cells where `mask` (bool, True = may attend) is False are marked with a dot.
    """
    keys = as_tokens(tokens)
    w = np.asarray(weights, dtype=float)  # (T_q, T_k)
    if w.ndim != 2 or w.shape[1] != len(keys):
        raise ValueError(f"weights must have shape (T_q, {len(keys)}) for {len(keys)} tokens, got {w.shape}")
    queries = keys if w.shape[0] == len(keys) else [str(i) for i in range(w.shape[0])]
    if query is not None and not 0 <= query < w.shape[0]:
        raise ValueError(f"query must be in [0, {w.shape[0]}), got {query}")
    if query is None:
        fig, ax_map = plt.subplots(figsize=(5.5, 4.5), layout="constrained")
    else:
        fig, (ax_map, ax_bar) = plt.subplots(1, 2, figsize=(10, 4.5), width_ratios=[1.1, 1],
                                             layout="constrained")
    im = ax_map.imshow(w, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
    ax_map.set_xticks(range(len(keys)), keys, rotation=45, ha="right")
    ax_map.set_yticks(range(len(queries)), queries)
    ax_map.set(xlabel="key (attended to)", ylabel="query (attending)", title=title)
    fig.colorbar(im, ax=ax_map, shrink=0.8)
    if mask is not None:
        blocked = np.argwhere(~np.broadcast_to(np.asarray(mask, dtype=bool), w.shape))
        ax_map.plot(blocked[:, 1], blocked[:, 0], ".", color="white", ms=4, ls="none")
    if query is not None:
        ax_map.add_patch(plt.Rectangle((-0.5, query - 0.5), len(keys), 1, fill=False, ec="red", lw=2))
        ax_bar.bar(range(len(keys)), w[query], color="tab:red")
        ax_bar.set_xticks(range(len(keys)), keys, rotation=45, ha="right")
        ax_bar.set(ylim=(0, 1), ylabel="weight", title=f"query {query} ({queries[query]!r}): row sums to "
                                                         f"{w[query].sum():.3f}")
    return fig


def plot_attention_explorer(tokens, scale=True, temperature=1.0, positional=False, mask="none",
                            query=0, d_model=16, seed=0):
    """The explorer's figure: the self-attention map of seeded embeddings (utils.attention_map)."""
    weights, allowed = attention_map(tokens, scale=scale, temperature=temperature,
                                     positional=positional, mask=mask, d_model=d_model, seed=seed)
    title = (f"{'scaled' if scale else 'unscaled'}, temperature={temperature:g}, "
             f"{'with' if positional else 'no'} PE, mask={mask}")
    return plot_attention(tokens, weights.numpy(), query=query, mask=allowed.numpy(), title=title)

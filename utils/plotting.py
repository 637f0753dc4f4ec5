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


# --- lesson 05: multi-head attention ---

def _attention_image(ax, weights, tokens, title, vmax=1.0):
    """One attention map (T_q, T_k) on `ax`, with token labels when given."""
    T_q, T_k = weights.shape
    im = ax.imshow(weights, cmap="viridis", vmin=0, vmax=vmax, interpolation="nearest")
    if tokens is not None:
        q_tokens, k_tokens = tokens if isinstance(tokens, tuple) else (tokens, tokens)
        ax.set_xticks(range(T_k), k_tokens, rotation=90)
        ax.set_yticks(range(T_q), q_tokens)
    ax.set(title=title, xlabel="key", ylabel="query")
    return im


def _check_head_weights(weights):
    """(num_heads, T_q, T_k) array of attention weights, or raise naming the argument."""
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3:
        raise ValueError(f"weights must have shape (num_heads, T_q, T_k), got {weights.shape}")
    return weights


def plot_head_grid(weights, tokens=None, ncols=4):
    """Every head's attention map side by side: weights (num_heads, T_q, T_k), one panel per head."""
    weights = _check_head_weights(weights)
    num_heads = weights.shape[0]
    ncols = min(ncols, num_heads)
    nrows = -(-num_heads // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.2 * nrows), squeeze=False,
                             layout="constrained")
    for i, ax in enumerate(axes.flat):
        if i < num_heads:
            im = _attention_image(ax, weights[i], tokens, f"head {i}")
        else:
            ax.axis("off")
    fig.colorbar(im, ax=axes, shrink=0.8)
    return fig


def plot_head_attention(weights, head=0, tokens=None):
    """The chosen head's attention map next to the average over heads (what torch returns by default)."""
    weights = _check_head_weights(weights)
    num_heads = weights.shape[0]
    if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < num_heads:
        raise ValueError(f"head must be an int in [0, num_heads={num_heads}), got {head!r}")
    fig, (ax_head, ax_mean) = plt.subplots(1, 2, figsize=(8, 3.8), layout="constrained")
    _attention_image(ax_head, weights[head], tokens, f"head {head} of {num_heads}")
    im = _attention_image(ax_mean, weights.mean(axis=0), tokens, "average over heads")
    fig.colorbar(im, ax=[ax_head, ax_mean], shrink=0.8)
    return fig

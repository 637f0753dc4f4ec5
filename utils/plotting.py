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


# --- lesson 07: toy translator ---


def plot_cross_attention(weights, src_words, tgt_words, gold=None, title="cross-attention"):
    """Heatmap of cross-attention weights (T_tgt x T_src) with the gold alignment drawn as white circles.

    gold[j] is the source index Neo word j translates (len(gold) <= T_tgt; None: no markers).
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 2 or w.shape != (len(tgt_words), len(src_words)):
        raise ValueError(f"weights must have shape (len(tgt_words)={len(tgt_words)}, "
                         f"len(src_words)={len(src_words)}), got {w.shape}")
    if gold is not None and (len(gold) > len(tgt_words) or any(not 0 <= g < len(src_words) for g in gold)):
        raise ValueError(f"gold must give at most {len(tgt_words)} source indices in [0, {len(src_words)}), "
                         f"got {list(gold)}")
    fig, ax = plt.subplots(figsize=(1.2 + 0.5 * len(src_words), 1.0 + 0.42 * len(tgt_words)), layout="constrained")
    im = ax.imshow(w, cmap="Blues", vmin=0, vmax=1, interpolation="nearest")
    if gold is not None and len(gold):
        ax.scatter(list(gold), range(len(gold)), s=110, facecolors="none", edgecolors="orange", linewidths=2,
                   label="gold alignment")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)
    ax.set_xticks(range(len(src_words)), src_words, rotation=60, ha="right")
    ax.set_yticks(range(len(tgt_words)), tgt_words)
    ax.set(xlabel="source word (key)", ylabel="predicted Neo word (query)", title=title)
    fig.colorbar(im, ax=ax, shrink=0.8, label="weight")
    return fig


def plot_training_history(losses, lrs, tokens_per_step=None):
    """Two panels: the training loss per step and the learning rate of the warm-up schedule per step."""
    steps = np.arange(1, len(losses) + 1)
    if len(lrs) != len(losses):
        raise ValueError(f"losses and lrs must have the same length, got {len(losses)} and {len(lrs)}")
    fig, (ax_loss, ax_lr) = plt.subplots(1, 2, figsize=(10, 3.2), layout="constrained")
    ax_loss.plot(steps, losses, lw=0.8, color="tab:blue")
    ax_loss.set(yscale="log", xlabel="step", ylabel="cross-entropy (nats per target token)", title="training loss")
    ax_lr.plot(steps, lrs, color="tab:red")
    ax_lr.set(xlabel="step", ylabel="learning rate", title="warm-up, then 1/sqrt(step) decay")
    return fig

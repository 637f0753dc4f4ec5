"""Figures of lesson 07: the next-word distribution at each greedy step, and per-head scores as heatmaps."""

import matplotlib.pyplot as plt
import numpy as np

from utils import validation
from utils.figures.plotting import panel_grid

CHOSEN, OTHER = "tab:blue", "tab:gray"  # the word greedy decoding picks, and the runners-up


def plot_decoding_steps(probs, itos, chosen, top=4, ncols=4):
    """One small bar chart per greedy step: the `top` most probable next words, the chosen one in blue.

    probs: (steps, vocab) next-word probabilities; itos: id -> word; chosen: the id picked at each step.
    """
    probs = validation.shape("probs", np.asarray(probs, dtype=float), ("steps", ("len(itos)", len(itos))))
    validation.shape("chosen", np.asarray(chosen), (("steps", probs.shape[0]),))  # one id per step
    top = validation.positive_int("top", top)
    steps = probs.shape[0]
    fig, axes = panel_grid(steps, ncols, (2.9, 1.5))
    for t, ax in enumerate(axes.flat):
        if t >= steps:
            ax.axis("off")
            continue
        order = np.argsort(-probs[t])[:top][::-1]  # most probable at the top
        colors = [CHOSEN if i == chosen[t] else OTHER for i in order]
        ax.barh(range(len(order)), probs[t, order], color=colors)
        for k, i in enumerate(order):  # the value beside each bar: runners-up may be too small to see
            ax.text(
                1.02,
                k,
                f"{probs[t, i]:.0e}" if probs[t, i] < 0.01 else f"{probs[t, i]:.2f}",
                va="center",
                fontsize=7,
                transform=ax.get_yaxis_transform(),
            )
        ax.set_yticks(range(len(order)), [itos[i] for i in order], fontsize=8)
        ax.set_xlim(0, 1)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_title(f"step {t + 1}: {itos[chosen[t]]}", fontsize=9)
    fig.suptitle("Greedy decoding: the next-word probabilities at each step (blue: the word appended)")
    return fig


def plot_head_scores(scores, title, label="fraction of arg-max hits"):
    """Heatmaps (num_layers x num_heads) side by side, one per entry of `scores`, with values written in."""
    validation.non_empty("scores", scores, dict, "dict name -> (num_layers, num_heads) array")
    arrays = {name: np.asarray(a, dtype=float) for name, a in scores.items()}
    first = validation.shape(
        f"scores[{next(iter(arrays))!r}]", next(iter(arrays.values())), ("num_layers", "num_heads")
    )
    layers, heads = first.shape
    for name, a in arrays.items():  # one shape for all
        validation.shape(f"scores[{name!r}]", a, (("num_layers", layers), ("num_heads", heads)))
    n = len(arrays)
    fig, axes = plt.subplots(
        1, n, figsize=(0.6 + 1.0 * heads * n, 0.9 + 0.75 * layers), squeeze=False, layout="constrained"
    )
    for ax, (name, a) in zip(axes[0], arrays.items()):
        im = ax.imshow(a, cmap="Blues", vmin=0, vmax=1)
        for (i, j), v in np.ndenumerate(a):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8, color="white" if v > 0.6 else "black")
        ax.set_xticks(range(heads))
        ax.set_yticks(range(layers))
        ax.set(xlabel="head", ylabel="decoder layer", title=name)
    fig.colorbar(im, ax=list(axes[0]), shrink=0.9, label=label)
    fig.suptitle(title)
    return fig
